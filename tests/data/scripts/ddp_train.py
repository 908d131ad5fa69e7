# DDP: wrap a small model, train two steps, check replicas stay identical.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    world = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    try:
        device = torch.device("cuda" if use_cuda else "cpu")
        torch.manual_seed(0)
        model = DDP(torch.nn.Linear(8, 4).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(4, 8, device=device) * (dist.get_rank() + 1)
        for _ in range(2):
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
        w = model.module.weight.detach().clone()
        gathered = [torch.empty_like(w) for _ in range(world)]
        dist.all_gather(gathered, w)
        assert all(torch.equal(g, gathered[0]) for g in gathered)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
