"""An LR scheduler's "monitor" (ReduceLROnPlateau) on an unsynced metric under a DDPStrategy Trainer on two nodes:
each rank's scheduler steps on its own shard's loss, and the learning rates of the replicas can differ."""

import pytorch_lightning as pl
import torch
from pytorch_lightning.strategies import DDPStrategy


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val/loss", torch.nn.functional.mse_loss(self.net(x), y), sync_dist=False)  # <- FSD087

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "val/loss"}}


def main(loader):
    trainer = pl.Trainer(accelerator="gpu", devices=8, num_nodes=2, strategy=DDPStrategy(find_unused_parameters=False))
    trainer.fit(Model(), loader, loader)
