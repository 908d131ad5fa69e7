import os

import torch
import torch.distributed as dist


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    dist.destroy_process_group()


def single_process_test():
    dist.init_process_group(backend="nccl", init_method="tcp://localhost:12357", world_size=1, rank=0)


if __name__ == "__main__":
    main()


def with_helper(cfg, utils):
    device = utils.get_device(cfg.device)  # a library helper that binds the GPU (torchtune's does)
    dist.init_process_group(backend="nccl")
    return device
