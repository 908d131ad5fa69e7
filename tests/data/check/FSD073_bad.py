"""FSD073: the rank on the node passed as the process's rank in a two-node job (both nodes claim ranks 0-1)."""

import argparse

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", "--local_rank", type=int, default=0)
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--dist-url", default="tcp://10.0.0.1:23456")
    args = parser.parse_args()
    torch.cuda.set_device(args.local_rank)
    dist.init_process_group("nccl", init_method=args.dist_url, world_size=args.world_size, rank=args.local_rank)  # <- FSD073
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
