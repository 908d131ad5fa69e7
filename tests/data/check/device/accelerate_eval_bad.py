"""An accelerate Trainer-like class: the evaluation method counts correct predictions from accelerator.gather over
the prepared eval loader."""

import torch
from accelerate import Accelerator


class Evaluator:
    def __init__(self, model, eval_loader):
        self.accelerator = Accelerator()
        self.model, self.eval_loader = self.accelerator.prepare(model, eval_loader)

    def validate(self):
        self.model.eval()
        correct, total = 0, 0
        for x, y in self.eval_loader:
            with torch.no_grad():
                preds = self.model(x).argmax(-1)
            all_preds = self.accelerator.gather(preds)  # <- FSD052
            all_labels = self.accelerator.gather(y)  # <- FSD052
            correct += (all_preds == all_labels).sum().item()
            total += all_labels.numel()
        return correct / total
