"""A DeepSpeed training loop whose step backpropagates the loss itself: the engine's backward (loss scaling, the
gradient average across the ranks at the accumulation boundary) never runs, so the replicas drift apart."""

import deepspeed
import torch


def train(model, loader, config):
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for x, y in loader:
        out = engine(x.to(engine.device))
        loss = torch.nn.functional.cross_entropy(out, y.to(engine.device))
        loss.backward()  # <- FSD082
        engine.step()
