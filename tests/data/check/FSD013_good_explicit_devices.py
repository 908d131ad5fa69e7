# Every tensor and the DDP wrapper name the rank's own GPU explicitly (the DDP tutorial's pattern), so NCCL
# never falls back to cuda:0.
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(nn.Linear(4, 4).to(rank), device_ids=[rank])
    model(torch.randn(2, 4).to(rank)).sum().backward()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
