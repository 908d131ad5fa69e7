# DDP told to look for unused parameters, on a model whose blocks are checkpointed the reentrant way.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(4))
        self.aux = torch.nn.Linear(16, 1)  # used on some steps only: hence find_unused_parameters

    def forward(self, x, with_aux=False):
        for block in self.blocks:
            x = checkpoint(block, x)  # <- FSD050
        return self.aux(x) if with_aux else x.sum(-1)


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = DDP(Net().cuda(), device_ids=[local_rank], find_unused_parameters=True)
    model(torch.randn(8, 16, device="cuda", requires_grad=True)).sum().backward()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
