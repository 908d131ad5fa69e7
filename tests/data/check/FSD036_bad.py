import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms import Join
from torch.nn.parallel import DistributedDataParallel as DDP


def train(batches, x_eval):
    model = DDP(nn.Linear(8, 8))
    with Join([model]):
        for x in batches:
            model(x).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            print(model(x_eval))  # <- FSD036
    dist.barrier()
