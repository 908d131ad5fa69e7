import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn


def build_gossip_group(rank, world_size, round_idx):
    g = torch.Generator().manual_seed(round_idx)
    perm = torch.randperm(world_size, generator=g)
    start = 0
    while rank not in perm[start : start + 2]:
        start += 2
    members = perm.tolist()[start : start + 2]
    return dist.new_group(members, timeout=timedelta(seconds=60))


class GossipAverager:
    """Averages parameters with one random peer per round (decentralized SGD)."""

    def __init__(self, model, rank, world_size):
        self.model, self.rank, self.world_size = model, rank, world_size

    @torch.no_grad()
    def average(self, round_idx):
        group = build_gossip_group(self.rank, self.world_size, round_idx)
        for p in self.model.parameters():
            dist.all_reduce(p.data, op=dist.ReduceOp.SUM, group=group)
            p.data.div_(2)


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    averager = GossipAverager(model, rank, world)
    for step in range(1, 5001):
        x = torch.randn(64, 512, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            averager.average(step // 10)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
