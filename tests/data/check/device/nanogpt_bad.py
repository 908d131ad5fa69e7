"""A nanoGPT-style script (module-level globals, seed_offset = ddp_rank) that switched to a DistributedSampler and
gave it the per-rank seed it already used for torch.manual_seed."""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group(backend="gloo")
    ddp_rank = int(os.environ["RANK"])
    seed_offset = ddp_rank
else:
    seed_offset = 0
torch.manual_seed(1337 + seed_offset)

data = TensorDataset(torch.randint(0, 50257, (1024, 65)))
sampler = DistributedSampler(data, seed=1337 + seed_offset) if ddp else None  # <- FSD048
loader = DataLoader(data, batch_size=8, sampler=sampler, shuffle=sampler is None)
for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for (batch,) in loader:
        x, y = batch[:, :-1], batch[:, 1:]
if ddp:
    dist.destroy_process_group()
