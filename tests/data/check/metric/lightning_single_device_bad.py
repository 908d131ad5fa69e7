"""The same module under a Trainer on two devices (a string list of GPUs): the monitored metric is per rank."""

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))  # <- FSD087


def main(loader):
    trainer = pl.Trainer(devices="0,1", callbacks=[ModelCheckpoint(monitor="val_loss")])
    trainer.fit(Model(), loader, loader)
