"""FSD079 near-misses, one edit from uneven_bad.py: equal slices per rank (the tail dropped), a DistributedSampler
(it pads), the ranks agree on the number of steps (all_reduce MIN), a loop inside Join, a fixed number of steps."""
import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def equal_rows(data, rank, world):
    per = len(data) // world
    return data[rank * per : (rank + 1) * per]


def agreed(model, parts, rank, world):
    mine = parts[rank::world]
    steps = torch.tensor([len(mine)])
    dist.all_reduce(steps, op=dist.ReduceOp.MIN)
    for x in mine:
        if steps.item() == 0:
            break
        steps -= 1
        model(x).sum().backward()


def joined(model, parts, rank, world):
    with Join([model]):
        for x in parts[rank::world]:
            model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(torch.nn.Linear(4, 1))
    data = torch.randn(10, 4)
    for x in equal_rows(data, rank, world):
        model(x).sum().backward()
    ds = TensorDataset(data)
    for (x,) in DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds)):
        model(x).sum().backward()
    agreed(model, list(data), rank, world)
    joined(model, list(data), rank, world)


if __name__ == "__main__":
    main()
