"""Lightning: a callback saves an extra checkpoint on global rank zero only (Lightning issues: save_checkpoint
hangs under DDP/FSDP strategies: it ends in a barrier of every rank), and a script does the same after fit."""

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.utilities import rank_zero_only


class SaveEveryEpoch(Callback):
    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            trainer.save_checkpoint(f"epoch{trainer.current_epoch}.ckpt")  # <- FSD039


class SaveAtEnd(Callback):
    @rank_zero_only
    def on_train_end(self, trainer, pl_module):
        trainer.save_checkpoint("last.ckpt")  # <- FSD039


def main(model, dm):
    trainer = pl.Trainer(strategy="fsdp", devices=2, callbacks=[SaveEveryEpoch(), SaveAtEnd()])
    trainer.fit(model, dm)
    if trainer.global_rank == 0:
        trainer.save_checkpoint("final.ckpt")  # <- FSD039
