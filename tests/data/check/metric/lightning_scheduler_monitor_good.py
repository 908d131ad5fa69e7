"""The scheduler's monitored metric logged with sync_dist=True (every rank's scheduler steps on the same value);
a metric logged with rank_zero_only=True is not judged."""

import pytorch_lightning as pl
import torch
from pytorch_lightning.strategies import DDPStrategy


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val/loss", torch.nn.functional.mse_loss(self.net(x), y), sync_dist=True)

    def on_validation_epoch_end(self):
        self.log("val/loss_rank0", 0.0, rank_zero_only=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "val/loss"}}


def main(loader):
    trainer = pl.Trainer(accelerator="gpu", devices=8, num_nodes=2, strategy=DDPStrategy(find_unused_parameters=False))
    trainer.fit(Model(), loader, loader)
