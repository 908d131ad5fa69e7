"""A composer-style test: the optimizer is built first and handed, through a nested function that closes over it, to
the helper that shards the model (the helper points the optimizer at the sharded parameters)."""

import torch
import torch.nn as nn
from torch.distributed.fsdp import fully_shard


def parallelize_model(model, config, optimizer=None):
    fully_shard(model)
    if optimizer is not None:
        optimizer.param_groups[0]["params"] = list(model.parameters())
    return model


def test_param_tying_fsdp_wrap(config):
    m1 = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
    opt = torch.optim.Adam(m1.parameters(), lr=0.01)

    def update_model(m1):
        parallelize_model(m1, config, opt)
        m1[0].weight = m1[1].weight

    update_model(m1)
