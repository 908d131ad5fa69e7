"""FSD085: the model is built on the CPU and wrapped at once with device_ids=[local_rank]: DDP raises "device_ids
and output_device arguments only work with single-device/multiple-device GPU modules or CPU modules"."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    model = DDP(model, device_ids=[local_rank])  # <- FSD085
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 32, device="cuda")
    model(x).sum().backward()
    opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
