import os

import torch
import torch.distributed as dist


def main():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")  # <- FSD014
    dist.barrier()


if __name__ == "__main__":
    main()
