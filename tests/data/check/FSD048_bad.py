# A per-rank seed given to DistributedSampler: each rank shuffles differently, the shards overlap.
import argparse
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed + rank)  # a per-rank seed for dropout: fine
    ds = TensorDataset(torch.arange(100.0))
    sampler = DistributedSampler(ds, shuffle=True, seed=args.seed + rank)  # <- FSD048
    loader = DataLoader(ds, batch_size=10, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            pass
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
