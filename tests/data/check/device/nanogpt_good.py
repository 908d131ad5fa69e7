"""The nanoGPT-style script, right: the per-rank offset seeds torch (dropout differs per rank, as it should); the
sampler gets the shared seed, so the ranks split one permutation."""

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
sampler = DistributedSampler(data, seed=1337) if ddp else None
loader = DataLoader(data, batch_size=8, sampler=sampler, shuffle=sampler is None)
for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for (batch,) in loader:
        x, y = batch[:, :-1], batch[:, 1:]
if ddp:
    dist.destroy_process_group()
