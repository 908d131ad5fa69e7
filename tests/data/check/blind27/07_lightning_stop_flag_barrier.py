import os

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class RemoteStopController(pl.Callback):
    """Lets a GUI stop training early by dropping a file next to the run."""

    def __init__(self, stop_file="STOP"):
        self.stop_file = stop_file

    def _stop_requested(self):
        return os.path.exists(self.stop_file)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.is_global_zero and self._stop_requested():
            print("stop command received, stopping early")
            trainer.should_stop = True
        trainer.strategy.barrier()


class PoseModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(32, 17, 3, padding=1))

    def training_step(self, batch, batch_idx):
        img, conf = batch
        loss = nn.functional.mse_loss(self.backbone(img), conf)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-4)


def build_loader():
    ds = TensorDataset(torch.randn(2048, 1, 64, 64), torch.rand(2048, 17, 64, 64))
    return DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)


def main():
    trainer = pl.Trainer(
        accelerator="gpu",
        devices=4,
        strategy="ddp",
        max_epochs=200,
        callbacks=[RemoteStopController()],
    )
    trainer.fit(PoseModel(), build_loader())


if __name__ == "__main__":
    main()
