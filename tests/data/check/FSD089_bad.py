"""accelerator.accumulate(model) entered once around the epoch's batch loop: the sync / step decision is made
once for every batch of the epoch."""

import torch
from accelerate import Accelerator


def train(model, optimizer, loader, epochs):
    accelerator = Accelerator(gradient_accumulation_steps=8)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for _ in range(epochs):
        with accelerator.accumulate(model):  # <- FSD089
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
