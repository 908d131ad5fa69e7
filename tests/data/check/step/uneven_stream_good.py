"""FSD079 near-misses, one edit from uneven_stream_bad.py: the evaluation runs a fixed number of steps on every rank
(zip with range(steps)), and the rank-seeded stream yields the same count on every rank (only the values differ)."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.data import DataLoader, IterableDataset


class ShardLines(IterableDataset):
    def __init__(self, pattern, rank):
        self.path = pattern.format(rank=rank)

    def __iter__(self):
        with open(self.path) as f:
            for line in f:
                yield torch.tensor([float(v) for v in line.split()])


class NoisyStream(IterableDataset):
    def __init__(self, rank, mean_len=1000):
        self.rank, self.mean_len = rank, mean_len

    def __iter__(self):
        g = torch.Generator().manual_seed(self.rank)
        for _ in range(self.mean_len):
            yield torch.randn(16, generator=g)


def evaluate(model, pattern, steps=50):
    rank = dist.get_rank()
    total = torch.zeros(())
    with torch.no_grad():
        for _, x in zip(range(steps), DataLoader(ShardLines(pattern, rank), batch_size=4)):
            total += model(x).sum()
    dist.all_reduce(total)
    return total.item()


def train(net, pattern):
    model = FSDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(NoisyStream(dist.get_rank()), batch_size=8):
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
    return evaluate(model, pattern)
