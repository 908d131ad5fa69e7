"""The callback done right: every rank reaches the barrier before the non-zero ranks leave; the decision is
broadcast through the strategy first; a rank-zero-only hook that runs no collective."""

import torch


class CheckpointEveryN:
    def __init__(self, every=100):
        self.every = every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        trainer.strategy.barrier()
        if trainer.global_rank != 0:
            return
        if batch_idx % self.every == 0:
            torch.save(pl_module.state_dict(), f"step{batch_idx}.pt")

    def on_validation_epoch_end(self, trainer, pl_module):
        stop = False
        if trainer.is_global_zero:
            stop = trainer.callback_metrics["val_loss"] > 10
        stop = trainer.strategy.broadcast(stop, src=0)
        if stop:
            trainer.strategy.barrier("stopping")
            trainer.should_stop = True

    def on_fit_end(self, trainer, pl_module):
        if trainer.global_rank != 0:
            return
        print("done")
