"""FSD079: every world_size-th sample per rank; with 10 samples on 4 ranks, ranks 0 and 1 get 3 and ranks 2 and
3 get 2: the first two run a third backward whose all-reduce the others never join."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
samples = [torch.randn(4) for _ in range(10)]
model = DDP(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in samples[rank::world]:  # <- FSD079
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
