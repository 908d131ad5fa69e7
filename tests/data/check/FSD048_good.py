# Right: the sampler's seed is the same on every rank (rank-dependent seeding stays in torch.manual_seed).
import argparse

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(args.seed + rank)
    ds = TensorDataset(torch.arange(100.0))
    sampler = DistributedSampler(ds, shuffle=True, seed=args.seed)
    eval_sampler = DistributedSampler(ds, shuffle=False, seed=rank)  # no shuffling: the seed is unused
    loader = DataLoader(ds, batch_size=10, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            pass
    print(len(eval_sampler))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
