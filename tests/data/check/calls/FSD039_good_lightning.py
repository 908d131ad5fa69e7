"""Lightning done right: save_checkpoint on every rank (Lightning writes from rank 0 itself); a HF-style trainer
object that has nothing to do with Lightning is not judged."""

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback


class SaveEveryEpoch(Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        trainer.save_checkpoint(f"epoch{trainer.current_epoch}.ckpt")
        if trainer.is_global_zero:
            print("saved")


def main(model, dm, other):
    trainer = pl.Trainer(strategy="fsdp", devices=2)
    trainer.fit(model, dm)
    trainer.save_checkpoint("final.ckpt")
    if other.global_rank == 0:
        other.save_checkpoint("x.ckpt")


def one_device(model):
    trainer = pl.Trainer(devices=1)
    trainer.fit(model)
    if trainer.is_global_zero:
        trainer.save_checkpoint("one.ckpt")  # one process: no barrier partner to miss
