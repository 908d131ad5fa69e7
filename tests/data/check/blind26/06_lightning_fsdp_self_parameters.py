import torch
import torch.nn as nn
import pytorch_lightning as pl
from pytorch_lightning.strategies import FSDPStrategy
from torch.utils.data import DataLoader, Dataset


class CharDataset(Dataset):
    def __init__(self, n=10_000, block=64, vocab=128):
        self.data = torch.randint(0, vocab, (n, block + 1))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        chunk = self.data[i]
        return chunk[:-1], chunk[1:]


class GPTModule(pl.LightningModule):
    def __init__(self, vocab=128, dim=256, layers=6, lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.tok = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, 8, 4 * dim, batch_first=True) for _ in range(layers)
        )
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        h = self.tok(idx)
        for blk in self.blocks:
            h = blk(h)
        return self.head(h)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


def main():
    loader = DataLoader(CharDataset(), batch_size=32, num_workers=2)
    strategy = FSDPStrategy(auto_wrap_policy={nn.TransformerEncoderLayer}, use_orig_params=False)
    trainer = pl.Trainer(accelerator="gpu", devices=4, strategy=strategy,
                         precision="16-mixed", max_epochs=2)
    trainer.fit(GPTModule(), loader)


if __name__ == "__main__":
    main()
