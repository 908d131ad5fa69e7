import torch
import torch.nn as nn
import pytorch_lightning as pl
from torch.utils.data import DataLoader, Dataset


class VarLenDataset(Dataset):
    def __init__(self, n=5000, dim=64):
        self.lengths = torch.randint(5, 50, (n,))
        self.dim = dim

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        L = int(self.lengths[i])
        return torch.randn(L, self.dim), torch.randint(0, 2, (L,))


def collate(batch):
    xs, ys = zip(*batch)
    x = nn.utils.rnn.pad_sequence(xs, batch_first=True)
    y = nn.utils.rnn.pad_sequence(ys, batch_first=True, padding_value=-100)
    return x, y


class Tagger(pl.LightningModule):
    def __init__(self, dim=64, hidden=128):
        super().__init__()
        self.rnn = nn.GRU(dim, hidden, batch_first=True)
        self.out = nn.Linear(hidden, 2)
        self.val_preds, self.val_targets = [], []

    def forward(self, x):
        return self.out(self.rnn(x)[0])

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x).transpose(1, 2), y, ignore_index=-100)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        mask = y != -100
        self.val_preds.append(logits.argmax(-1)[mask])
        self.val_targets.append(y[mask])

    def on_validation_epoch_end(self):
        preds = torch.cat(self.val_preds)
        targets = torch.cat(self.val_targets)
        all_preds = self.all_gather(preds)
        all_targets = self.all_gather(targets)
        acc = (all_preds == all_targets).float().mean()
        self.log("val_acc", acc, rank_zero_only=True)
        self.val_preds.clear()
        self.val_targets.clear()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    train = DataLoader(VarLenDataset(), batch_size=32, shuffle=True, collate_fn=collate)
    val = DataLoader(VarLenDataset(1000), batch_size=32, collate_fn=collate)
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy="ddp", max_epochs=10)
    trainer.fit(Tagger(), train, val)
