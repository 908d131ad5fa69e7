"""The same loop done right: accelerator.accumulate(model) entered for each batch, around its forward, backward
and step."""

import torch
from accelerate import Accelerator


def train(model, optimizer, loader, epochs):
    accelerator = Accelerator(gradient_accumulation_steps=8)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for _ in range(epochs):
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
