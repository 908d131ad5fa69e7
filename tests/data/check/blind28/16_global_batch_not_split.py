import argparse
import torch
import torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, IterableDataset


class SparseBatchDataset(IterableDataset):
    def __init__(self, batch_size, num_features=40960):
        self.batch_size = batch_size
        self.num_features = num_features

    def __iter__(self):
        while True:
            idx = torch.randint(0, self.num_features, (self.batch_size, 32))
            score = torch.randn(self.batch_size)
            yield idx, score


class NNUE(L.LightningModule):
    def __init__(self, num_features=40960, l1=1024, lr=8.75e-4):
        super().__init__()
        self.save_hyperparameters()
        self.ft = nn.EmbeddingBag(num_features, l1, mode="sum")
        self.l2 = nn.Sequential(nn.ReLU(), nn.Linear(l1, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, idx):
        return self.l2(self.ft(idx)).squeeze(-1)

    def training_step(self, batch, batch_idx):
        idx, score = batch
        loss = (self(idx) - score.sigmoid()).pow(2).mean()
        self.log("train_loss", loss, sync_dist=True)
        return loss

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.992)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=16384, help="number of positions per optimizer step")
    p.add_argument("--epoch-size", type=int, default=100_000_000, help="positions per epoch")
    p.add_argument("--gpus", type=int, default=4)
    p.add_argument("--max-epochs", type=int, default=400)
    args = p.parse_args()

    steps_per_epoch = args.epoch_size // args.batch_size
    ds = SparseBatchDataset(args.batch_size)
    loader = DataLoader(ds, batch_size=None, num_workers=4, pin_memory=True)
    trainer = L.Trainer(
        accelerator="gpu", devices=args.gpus, strategy="ddp",
        max_epochs=args.max_epochs, limit_train_batches=steps_per_epoch,
    )
    trainer.fit(NNUE(), loader)


if __name__ == "__main__":
    main()
