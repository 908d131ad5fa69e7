"""FSD069: a DDP wrapper's state dict (keys `module.*`) saved, then loaded into the bare model to resume."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 4)
    path = os.path.join("runs", "last.pt")
    if os.path.exists(path):
        model.load_state_dict(torch.load(path, map_location="cpu"))  # <- FSD069
    ddp_model = DDP(model)
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        ddp_model(torch.randn(2, 4)).sum().backward()
        opt.step()
    if dist.get_rank() == 0:
        torch.save(ddp_model.state_dict(), path)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
