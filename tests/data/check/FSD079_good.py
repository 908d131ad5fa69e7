"""FSD079 fixed: the samples are first cut to a multiple of the world size, so every rank gets as many."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
samples = [torch.randn(4) for _ in range(10)]
samples = samples[: len(samples) // world * world]
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in samples[rank::world]:
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
