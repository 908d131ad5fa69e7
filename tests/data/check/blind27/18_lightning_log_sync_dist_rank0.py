import time

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class EnergyPotential(pl.LightningModule):
    def __init__(self, n_features=64, lr=5e-4):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(n_features, 256), nn.SiLU(),
                                 nn.Linear(256, 256), nn.SiLU(), nn.Linear(256, 1))
        self._epoch_start = None

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, energy = batch
        loss = nn.functional.mse_loss(self(x), energy)
        self.log("train/mse", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, energy = batch
        self.log("val/mse", nn.functional.mse_loss(self(x), energy), sync_dist=True)

    def on_train_epoch_start(self):
        self._epoch_start = time.time()

    def on_train_epoch_end(self):
        if self.global_rank == 0:
            elapsed = torch.tensor(time.time() - self._epoch_start, device=self.device)
            self.log("epoch_time", elapsed, sync_dist=True)
            lr = self.trainer.optimizers[0].param_groups[0]["lr"]
            self.log("lr", lr, sync_dist=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
        return [opt], [sched]


def loaders():
    x, e = torch.randn(20_000, 64), torch.randn(20_000)
    train = DataLoader(TensorDataset(x[:18_000], e[:18_000]), batch_size=128, shuffle=True)
    val = DataLoader(TensorDataset(x[18_000:], e[18_000:]), batch_size=256)
    return train, val


def main():
    train, val = loaders()
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=100)
    trainer.fit(EnergyPotential(), train, val)


if __name__ == "__main__":
    main()
