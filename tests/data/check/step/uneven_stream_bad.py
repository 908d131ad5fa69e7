"""FSD079 shapes: an evaluation loop with an FSDP forward (each one all-gathers the parameters) over an
IterableDataset that streams this rank's own shard file to its end, so ranks run different numbers of forwards; and
a stream whose length each rank draws from a rank-seeded generator, trained on."""
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
        count = int(torch.poisson(torch.tensor(float(self.mean_len)), generator=g))
        for _ in range(count):
            yield torch.randn(16, generator=g)


def evaluate(model, pattern):
    rank = dist.get_rank()
    total = torch.zeros(())
    with torch.no_grad():
        for x in DataLoader(ShardLines(pattern, rank), batch_size=4):  # <- FSD079
            total += model(x).sum()
    dist.all_reduce(total)
    return total.item()


def train(net, pattern):
    model = FSDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in DataLoader(NoisyStream(dist.get_rank()), batch_size=8):  # <- FSD079
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()
    return evaluate(model, pattern)
