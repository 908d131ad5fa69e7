"""FSD001 through a sharding helper: silent where the helper is given the optimizer (it can rebuild it or point it at
the sharded parameters, as composer's parallelize_model(model, cfg, optimizer) does), reported where it is not."""

import torch
from torch.distributed.fsdp import fully_shard


def parallelize_model(model, cfg, optimizer=None):
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)


def train(model, cfg):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    parallelize_model(model, cfg, optimizer)
    return optimizer


def train_bad(model, cfg):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)  # <- FSD001
    parallelize_model(model, cfg)
    return optimizer
