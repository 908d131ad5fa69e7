"""Unsynced monitored metric under a Trainer that runs one process (devices=1): there is nothing to sync."""

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import ModelCheckpoint


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 1)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))


def main(loader):
    trainer = pl.Trainer(devices=1, callbacks=[ModelCheckpoint(monitor="val_loss")])
    trainer.fit(Model(), loader, loader)
