# An NCCL job averaging its validation loss: the statistics tensor is built on the CPU and sent as is.
import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    model = torch.nn.Linear(8, 1).cuda()
    total, count = 0.0, 0
    for _ in range(4):
        x = torch.randn(16, 8, device="cuda")
        total += model(x).pow(2).mean().item()
        count += 1
    stats = torch.tensor([total, count])  # built on the CPU: no device=
    dist.all_reduce(stats)  # <- FSD047
    flag = torch.zeros(1)
    dist.broadcast(flag, src=0)  # <- FSD047
    print(stats[0] / stats[1], flag)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
