import json
import os

import lightning.pytorch as pl
import torch
import torch.nn as nn
from lightning.pytorch.utilities import rank_zero_only
from torch.utils.data import DataLoader, Dataset


class RandomDataset(Dataset):
    def __init__(self, size, length):
        self.data = torch.randn(length, size)

    def __getitem__(self, index):
        return self.data[index]

    def __len__(self):
        return len(self.data)


class Segmenter(pl.LightningModule):
    def __init__(self, lr=1e-3, hidden=64):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def forward(self, x):
        return self.net(x)

    @rank_zero_only
    def on_fit_start(self):
        run_dir = self.trainer.log_dir
        os.makedirs(run_dir, exist_ok=True)
        with open(os.path.join(run_dir, "config.json"), "w") as f:
            json.dump(dict(self.hparams), f, indent=2)

    def training_step(self, batch, batch_idx):
        out = self(batch)
        loss = nn.functional.mse_loss(out, torch.ones_like(out))
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def main():
    trainer = pl.Trainer(accelerator="gpu", devices=2, strategy="ddp", max_epochs=5,
                         log_every_n_steps=10)
    loader = DataLoader(RandomDataset(32, 6400), batch_size=64)
    trainer.fit(Segmenter(), loader)


if __name__ == "__main__":
    main()
