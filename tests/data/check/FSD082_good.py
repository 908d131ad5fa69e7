"""The same DeepSpeed loop done right: engine.backward(loss), then engine.step(); a plain backward of a model that
is not the engine (a frozen teacher's auxiliary loss computed before the engine exists) is not the engine's step."""

import deepspeed
import torch


def train(model, teacher, loader, config):
    probe = teacher(torch.zeros(1, 16)).sum()
    probe.backward()
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    for x, y in loader:
        out = engine(x.to(engine.device))
        loss = torch.nn.functional.cross_entropy(out, y.to(engine.device))
        engine.backward(loss)
        engine.step()
