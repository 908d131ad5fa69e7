import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import get_cosine_schedule_with_warmup


class Classifier(nn.Module):
    def __init__(self, dim=768, classes=20):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def training_function(num_epochs=5, grad_accum=8, lr=2e-5):
    accelerator = Accelerator(gradient_accumulation_steps=grad_accum, mixed_precision="bf16")
    ds = TensorDataset(torch.randn(32000, 768), torch.randint(0, 20, (32000,)))
    train_dataloader = DataLoader(ds, batch_size=16, shuffle=True)
    model = Classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    scheduler = get_cosine_schedule_with_warmup(optimizer, 100, num_epochs * len(train_dataloader) // grad_accum)
    model, optimizer, train_dataloader, scheduler = accelerator.prepare(model, optimizer, train_dataloader, scheduler)

    for epoch in range(num_epochs):
        model.train()
        with accelerator.accumulate(model):
            for step, (x, y) in enumerate(train_dataloader):
                logits = model(x)
                loss = nn.functional.cross_entropy(logits, y)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        accelerator.print(f"epoch {epoch} last loss {loss.item():.4f}")
    accelerator.wait_for_everyone()
    accelerator.save_model(model, "out")


if __name__ == "__main__":
    training_function()
