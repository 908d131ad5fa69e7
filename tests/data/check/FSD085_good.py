"""FSD085, fixed: the model is moved to this rank's GPU before DDP is told its index."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    model = model.to(local_rank)
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 32, device="cuda")
    model(x).sum().backward()
    opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
