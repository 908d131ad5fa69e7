# The group is formed and a barrier taken before each rank binds its GPU: the barrier runs on cuda:0 everywhere.
import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend="nccl")
    dist.barrier()  # <- FSD051
    torch.cuda.set_device(local_rank)
    model = torch.nn.Linear(4, 4).cuda()
    dist.all_reduce(model.weight.data)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
