"""FSD073 near-miss: the global rank computed from the node's index and the rank on the node."""

import argparse

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local-rank", "--local_rank", type=int, default=0)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--gpus-per-node", type=int, default=2)
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--dist-url", default="tcp://10.0.0.1:23456")
    args = parser.parse_args()
    torch.cuda.set_device(args.local_rank)
    rank = args.node_rank * args.gpus_per_node + args.local_rank
    dist.init_process_group("nccl", init_method=args.dist_url, world_size=args.world_size, rank=rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
