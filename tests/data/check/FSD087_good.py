"""The same module done right: the monitored metrics are logged with sync_dist=True; a metric nobody monitors
(train_loss) may stay per rank, and a torchmetrics Metric object logged whole syncs itself."""

import lightning as L
import torch
import torchmetrics
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 1)
        self.val_mae = torchmetrics.MeanAbsoluteError()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("val_loss", loss, on_epoch=True, prog_bar=True, sync_dist=True)
        self.val_mae(self.net(x), y)
        self.log("val_mae", self.val_mae, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main(train_loader, val_loader):
    callbacks = [ModelCheckpoint(monitor="val_loss", save_top_k=2), EarlyStopping("val_mae", patience=3)]
    trainer = L.Trainer(accelerator="gpu", devices=4, strategy="ddp", callbacks=callbacks)
    trainer.fit(Regressor(), train_loader, val_loader)
