# Pattern from https://github.com/Peterande/D-FINE/issues/289: "Duplicate GPU detected : rank 0 and rank 1 both on
# CUDA device 2000" under torchrun; the reporter had set a default GPU in train.py while debugging, so every rank
# took that one GPU. Our code, details replaced.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(1)  # <- FSD074
    dist.init_process_group("nccl")
    return local_rank


def main():
    local_rank = setup()
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    images = torch.randn(2, 3, 32, 32).cuda()
    model(images).mean().backward()
    optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
