import torch
import torch.nn as nn
import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset


class SpeechEncoder(pl.LightningModule):
    def __init__(self, n_mels=80, hidden=256, n_tokens=40, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.LSTM(n_mels, hidden, num_layers=3, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * hidden, n_tokens)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.proj(out)

    def _loss(self, batch):
        x, y = batch
        logits = self(x)
        return nn.functional.cross_entropy(logits.transpose(1, 2), y)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("val_loss", loss, on_epoch=True, prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=2)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "val_loss"}}


def loaders():
    x = torch.randn(8000, 200, 80)
    y = torch.randint(0, 40, (8000, 200))
    train = TensorDataset(x[:7000], y[:7000])
    val = TensorDataset(x[7000:], y[7000:])
    return DataLoader(train, batch_size=32, shuffle=True, num_workers=4), DataLoader(val, batch_size=32, num_workers=4)


if __name__ == "__main__":
    train_loader, val_loader = loaders()
    ckpt = ModelCheckpoint(monitor="val_loss", mode="min", save_top_k=3, filename="{epoch}-{val_loss:.3f}")
    trainer = pl.Trainer(
        accelerator="gpu", devices=4, strategy="ddp", max_epochs=40,
        val_check_interval=0.25, callbacks=[ckpt],
    )
    trainer.fit(SpeechEncoder(), train_loader, val_loader)
