# Must stay silent. From https://github.com/meta-pytorch/torchtune/issues/2169: torch.nn.utils.clip_grad_norm_ is
# right for FSDP2 (fully_shard) models, whose gradients are DTensors. Our code, details replaced.
import torch
import torch.nn as nn
from torch.distributed.fsdp import fully_shard


def step(batch, max_norm=1.0):
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 1))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(batch).sum().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
    optim.step()
