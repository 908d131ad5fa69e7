"""The same stops decided together: rank 0's verdict shared (``reduce_boolean_decision``, ``strategy.broadcast``)
before the loop reads it, or a flag set on every rank from values every rank holds (the epoch, the step)."""

import os

import lightning as L
from lightning.pytorch.callbacks import Callback
from transformers import TrainerCallback


class StopFileCallback(Callback):
    def __init__(self, stop_file):
        self.stop_file = stop_file

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.is_global_zero and os.path.exists(self.stop_file):
            trainer.should_stop = True
        trainer.should_stop = trainer.strategy.reduce_boolean_decision(trainer.should_stop, all=False)


class Regressor(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        return ((self.net(x) - y) ** 2).mean()

    def on_train_epoch_end(self):
        if self.global_rank == 0 and os.path.exists("STOP"):
            self.trainer.should_stop = True
        self.trainer.should_stop = self.trainer.strategy.broadcast(self.trainer.should_stop, src=0)


class EpochBudget(Callback):
    def __init__(self, max_epochs):
        self.max_epochs = max_epochs

    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.current_epoch + 1 >= self.max_epochs:
            trainer.should_stop = True  # every rank holds the same epoch
        if trainer.is_global_zero:
            print("epoch", trainer.current_epoch, "done")


class StepBudget(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= 1000:
            control.should_training_stop = True
        return control
