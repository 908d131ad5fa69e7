"""FSD085, shapes that are right: the module moved before the wrap (in place or chained), built under a device
context or with device=, a class that moves itself, ids only when CUDA is there, a module a helper built (it may
have moved it), and a CPU run without device_ids."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)


class OnGpu(nn.Module):
    def __init__(self, local_rank):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.cuda(local_rank)


def build(local_rank):
    return Net().to(local_rank)


def shapes(local_rank):
    a = Net()
    a.to(local_rank)
    a = DDP(a, device_ids=[local_rank])
    b = DDP(Net().cuda(local_rank), device_ids=[local_rank])
    with torch.device("cuda", local_rank):
        c = Net()
    c = DDP(c, device_ids=[local_rank])
    d = DDP(nn.Linear(8, 8, device=f"cuda:{local_rank}"), device_ids=[local_rank])
    e = DDP(OnGpu(local_rank), device_ids=[local_rank])
    f = DDP(Net(), device_ids=[local_rank] if torch.cuda.is_available() else None)
    g = DDP(build(local_rank), device_ids=[local_rank])
    h = DDP(Net())
    return a, b, c, d, e, f, g, h
