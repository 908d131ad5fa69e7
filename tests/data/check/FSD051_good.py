# Right: set_device first (the barrier then runs on the rank's GPU), or a barrier told its device.
import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group(backend="nccl")
    dist.barrier(device_ids=[local_rank])  # the device named: fine before set_device
    torch.cuda.set_device(local_rank)
    dist.barrier()
    model = torch.nn.Linear(4, 4).cuda()
    dist.all_reduce(model.weight.data)
    dist.destroy_process_group()


def bound_at_init():
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    dist.barrier()
    torch.cuda.set_device(local_rank)


if __name__ == "__main__":
    main()
