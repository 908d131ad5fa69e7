"""A LightningModule logging the validation loss without sync_dist under a 4-GPU DDP Trainer, while ModelCheckpoint
and EarlyStopping watch it: each rank watches the mean over its own validation shard."""

import lightning as L
import torch
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint


class Regressor(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("val_loss", loss, on_epoch=True, prog_bar=True)  # <- FSD087
        self.log_dict({"val_mae": (self.net(x) - y).abs().mean()}, on_epoch=True)  # <- FSD087

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main(train_loader, val_loader):
    callbacks = [ModelCheckpoint(monitor="val_loss", save_top_k=2), EarlyStopping("val_mae", patience=3)]
    trainer = L.Trainer(accelerator="gpu", devices=4, strategy="ddp", callbacks=callbacks)
    trainer.fit(Regressor(), train_loader, val_loader)
