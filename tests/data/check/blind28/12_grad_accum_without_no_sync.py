import argparse
import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def get_dataloaders(batch_size):
    x = torch.randint(0, 30000, (40000, 128))
    y = torch.randint(0, 2, (40000,))
    ds = TensorDataset(x, y)
    return DataLoader(ds, batch_size=batch_size, shuffle=True), DataLoader(ds, batch_size=64)


class TextClassifier(nn.Module):
    def __init__(self, vocab=30000, d=768):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 12, 3072, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 6)
        self.cls = nn.Linear(d, 2)

    def forward(self, ids):
        return self.cls(self.enc(self.emb(ids)).mean(1))


def training_function(args):
    accelerator = Accelerator(mixed_precision=args.mixed_precision)
    train_dataloader, eval_dataloader = get_dataloaders(args.batch_size)
    model = TextClassifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model, optimizer, train_dataloader, eval_dataloader = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader
    )
    gradient_accumulation_steps = args.gradient_accumulation_steps
    for epoch in range(args.epochs):
        model.train()
        for step, (ids, labels) in enumerate(train_dataloader):
            outputs = model(ids)
            loss = nn.functional.cross_entropy(outputs, labels)
            loss = loss / gradient_accumulation_steps
            accelerator.backward(loss)
            if step % gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
        model.eval()
        correct = 0
        for ids, labels in eval_dataloader:
            with torch.no_grad():
                preds = model(ids).argmax(-1)
            preds, labels = accelerator.gather_for_metrics((preds, labels))
            correct += (preds == labels).sum().item()
        accelerator.print(f"epoch {epoch}: acc {correct / len(eval_dataloader.dataset):.4f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--mixed_precision", default="fp16")
    p.add_argument("--batch_size", type=int, default=16)
    p.add_argument("--gradient_accumulation_steps", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--epochs", type=int, default=3)
    training_function(p.parse_args())
