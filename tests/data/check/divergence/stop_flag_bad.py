"""A framework's stop flag set on one rank only: Lightning (a callback, a LightningModule hook, a
``@rank_zero_only`` hook) and the Hugging Face Trainer leave their loop on that rank while the others train on."""

import os

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_only
from transformers import TrainerCallback


class StopFileCallback(Callback):
    """Stops when an operator drops a STOP file next to rank 0's log."""

    def __init__(self, stop_file):
        self.stop_file = stop_file

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.is_global_zero and os.path.exists(self.stop_file):
            trainer.should_stop = True  # <- FSD037
        trainer.strategy.barrier()


class Regressor(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        return ((self.net(x) - y) ** 2).mean()

    def on_train_epoch_end(self):
        if self.global_rank == 0:
            answer = input("continue? ")
            if answer.strip() == "n":
                self.trainer.should_stop = True  # <- FSD037


class RankZeroStop(Callback):
    @rank_zero_only
    def on_validation_end(self, trainer, pl_module):
        if trainer.callback_metrics["val_loss"] < 0.01:
            trainer.should_stop = True  # <- FSD037


class CommandCallback(TrainerCallback):
    def __init__(self, queue):
        self.queue = queue

    def on_step_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero and not self.queue.empty():
            if self.queue.get() == "stop":
                control.should_training_stop = True  # <- FSD037
        return control
