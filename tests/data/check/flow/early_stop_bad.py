"""Early stopping in a Trainer class on each rank's own validation accuracy (an accelerate loop)."""

import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model, optimizer, train_loader, val_loader):
        self.accelerator = Accelerator()
        self.model, self.optimizer, self.train_loader, self.val_loader = self.accelerator.prepare(
            model, optimizer, train_loader, val_loader
        )

    def validate(self):
        correct = total = 0
        for batch in self.val_loader:
            with torch.no_grad():
                preds = self.model(batch["x"]).argmax(-1)
            correct += (preds == batch["y"]).sum().item()
            total += len(preds)
        return correct / total

    def fit(self, epochs, target=0.95):
        for epoch in range(epochs):
            for batch in self.train_loader:
                loss = self.model(batch["x"]).logsumexp(-1).mean()
                self.accelerator.backward(loss)
                self.optimizer.step()
                self.optimizer.zero_grad()
            accuracy = self.validate()
            if accuracy > target:
                break  # <- FSD058
