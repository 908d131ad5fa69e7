# FSDP2: shard a small MLP with fully_shard, train two steps, check gradients were freed.
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def main() -> None:
    world = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    try:
        device = torch.device("cuda" if use_cuda else "cpu")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(device)
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        x = torch.randn(4, 8, device=device)
        for _ in range(2):
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
        assert all(p.grad is None for p in model.parameters())
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
