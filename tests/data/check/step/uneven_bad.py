"""FSD079 shapes: np.array_split in a helper the loop's Dataset is built from, a tensor chunked per rank in a
Trainer, an IterableDataset keeping i % world == rank, and a metric all-reduced per batch over islice."""
import itertools

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, IterableDataset


class Rows(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i], dtype=torch.float32)


class Stream(IterableDataset):
    def __init__(self, n, rank, world):
        self.n, self.rank, self.world = n, rank, world

    def __iter__(self):
        for i in range(self.n):
            if i % self.world == self.rank:
                yield torch.randn(4)


def my_rows(rank, world):
    return np.array_split(np.random.rand(10, 4), world)[rank]


class Trainer:
    def __init__(self, model, data, rank, world):
        self.model = DDP(model)
        self.part = torch.chunk(data, world)[rank]

    def fit(self):
        for x in self.part:  # <- FSD079
            self.model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(4, 1))
    for x in DataLoader(Rows(my_rows(rank, world)), batch_size=2):  # <- FSD079
        model(x).sum().backward()
    for x in DataLoader(Stream(10, rank, world), batch_size=2):  # <- FSD079
        model(x).sum().backward()
    Trainer(torch.nn.Linear(4, 1), torch.randn(10, 4), rank, world).fit()
    for line in itertools.islice(open("metrics.txt"), rank, None, world):  # <- FSD079
        value = torch.tensor([float(line)])
        dist.all_reduce(value)


if __name__ == "__main__":
    main()
