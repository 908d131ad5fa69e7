# The same job, right: the tensors are built on (or moved to) the rank's GPU, or sent over a Gloo group.
import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    cpu_group = dist.new_group(backend="gloo")
    device = torch.device("cuda", local_rank)
    model = torch.nn.Linear(8, 1).to(device)
    total, count = 0.0, 0
    for _ in range(4):
        x = torch.randn(16, 8, device=device)
        total += model(x).pow(2).mean().item()
        count += 1
    stats = torch.tensor([total, count], device=device)
    dist.all_reduce(stats)
    moved = torch.tensor([total]).cuda()
    dist.all_reduce(moved)
    flag = torch.zeros(1)
    dist.broadcast(flag, src=0, group=cpu_group)  # a Gloo group carries CPU tensors
    print(stats[0] / stats[1], moved, flag)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
