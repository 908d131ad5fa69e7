# A Lightning DDP script that warm-starts from a checkpoint in a helper: every rank restores it onto cuda:0.
import argparse

import lightning.pytorch as pl
import torch


class Regressor(pl.LightningModule):
    def __init__(self, width=64):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Linear(width, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x).squeeze(-1), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def build_model(args):
    if args.resume:
        return Regressor.load_from_checkpoint(args.resume)  # <- FSD043
    return Regressor()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default=None)
    args = parser.parse_args()
    data = torch.utils.data.TensorDataset(torch.randn(256, 64), torch.randn(256))
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=1)
    trainer.fit(build_model(args), torch.utils.data.DataLoader(data, batch_size=32))


if __name__ == "__main__":
    main()
