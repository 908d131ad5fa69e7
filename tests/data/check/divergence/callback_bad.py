"""A Lightning-like callback: the hook returns early on the non-zero ranks, before the strategy's barrier that every
rank must reach; a decision on a metric computed on rank zero only."""

import torch


class CheckpointEveryN:
    def __init__(self, every=100):
        self.every = every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_rank != 0:
            return  # <- FSD037
        if batch_idx % self.every == 0:
            torch.save(pl_module.state_dict(), f"step{batch_idx}.pt")
        trainer.strategy.barrier()

    def on_validation_epoch_end(self, trainer, pl_module):
        stop = False
        if trainer.is_global_zero:
            stop = trainer.callback_metrics["val_loss"] > 10
        if stop:  # <- FSD038
            trainer.strategy.barrier("stopping")
            trainer.should_stop = True
