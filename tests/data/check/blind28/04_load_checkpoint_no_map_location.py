import argparse
import torch
import torch.nn as nn
import pytorch_lightning as pl
from torch.utils.data import DataLoader, TensorDataset


class PotentialModel(pl.LightningModule):
    def __init__(self, num_features=128, hidden=256, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Linear(num_features, hidden), nn.SiLU(),
            nn.Linear(hidden, hidden), nn.SiLU(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("val_loss", loss, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def build_loaders(n=20000, feats=128, bs=64):
    x = torch.randn(n, feats)
    y = x.pow(2).sum(-1)
    ds = TensorDataset(x, y)
    train, val = torch.utils.data.random_split(ds, [n - 2000, 2000])
    return DataLoader(train, batch_size=bs, shuffle=True, num_workers=4), DataLoader(val, batch_size=bs, num_workers=4)


def setup_model(args):
    if args.init_from:
        model = PotentialModel.load_from_checkpoint(args.init_from)
    else:
        model = PotentialModel(lr=args.lr)
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--init-from", default=None)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--devices", type=int, default=8)
    args = parser.parse_args()

    train_loader, val_loader = build_loaders()
    model = setup_model(args)
    trainer = pl.Trainer(
        accelerator="gpu",
        devices=args.devices,
        strategy="ddp",
        max_epochs=50,
        precision="32",
    )
    trainer.fit(model, train_loader, val_loader)


if __name__ == "__main__":
    main()
