# Pattern from https://github.com/csguoh/MambaIR/issues/39 ("Duplicate GPU detected : rank 1 and rank 3 both on
# CUDA device"): NCCL initialised without binding each process to its GPU. Our code, details replaced.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group(backend="nccl")  # <- FSD013
    net = DDP(nn.Linear(8, 8).cuda())
    net(torch.randn(2, 8, device="cuda")).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
