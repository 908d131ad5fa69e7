"""FSD071: the checkpoint is loaded on rank 0 after DDP(...) was built; DDP broadcast the old weights already."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.nn.Linear(4, 4))
    optimizer = torch.optim.Adam(model.parameters())
    if rank == 0 and os.path.exists("ckpt.pt"):
        ckpt = torch.load("ckpt.pt", map_location="cpu")
        model.module.load_state_dict(ckpt["model"])  # <- FSD071
        optimizer.load_state_dict(ckpt["optimizer"])  # <- FSD071
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
