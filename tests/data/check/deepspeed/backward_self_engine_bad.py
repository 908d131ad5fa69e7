"""A trainer class keeping the engine in ``self.engine`` (unpacked from deepspeed.initialize) whose step calls
``loss.backward()`` on a loss computed from the engine's output through a criterion."""

import deepspeed
import torch


class Runner:
    def __init__(self, net, config):
        self.engine, self.opt, _, _ = deepspeed.initialize(model=net, model_parameters=net.parameters(), config=config)
        self.loss_fn = torch.nn.MSELoss()

    def step(self, x, y):
        pred = self.engine.forward(x)
        loss = self.loss_fn(pred, y) * 0.5
        loss.backward()  # <- FSD082
        self.engine.step()
        return loss.item()
