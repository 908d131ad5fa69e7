"""FSD071 near-miss: rank 0 loads the weights before DDP(...) (its constructor broadcasts them); every rank loads the
optimizer state."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(4, 4)
    if rank == 0 and os.path.exists("ckpt.pt"):
        model.load_state_dict(torch.load("ckpt.pt", map_location="cpu")["model"])
    model = DDP(model)
    optimizer = torch.optim.Adam(model.parameters())
    if os.path.exists("ckpt.pt"):
        optimizer.load_state_dict(torch.load("ckpt.pt", map_location="cpu")["optimizer"])
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
