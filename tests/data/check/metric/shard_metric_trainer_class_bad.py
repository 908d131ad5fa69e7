"""A trainer class: the validation loader (a DistributedSampler) kept in self., a meter's average returned
unreduced, the best value kept with max() (ImageNet-style)."""

import torch
from torch.utils.data import DataLoader, DistributedSampler


class Meter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n):
        self.sum += value * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


class Trainer:
    def __init__(self, model, val_ds):
        self.model = model
        self.val_loader = DataLoader(val_ds, batch_size=64, sampler=DistributedSampler(val_ds, shuffle=False))
        self.best_top1 = 0.0

    @torch.no_grad()
    def validate(self):
        top1 = Meter()
        for images, target in self.val_loader:
            out = self.model(images)
            top1.update((out.argmax(1) == target).float().mean().item(), images.size(0))
        return top1.avg

    def run(self, epochs):
        for _ in range(epochs):
            top1 = self.validate()
            self.best_top1 = max(top1, self.best_top1)  # <- FSD086
