"""The near misses of the helper shape: a sampler in the helper, a dataset split by rank (Subset, HF datasets'
split_dataset_by_node, .shard), an IterableDataset that reads the rank, a loader given to accelerator.prepare,
and an evaluation loader with no backward. (FSD079 marks the epoch loop: the Stream's files split per rank give
the ranks different numbers of batches, and the ones with more wait in a backward the others never run.)"""

import os

import torch
import torch.distributed as dist
from accelerate import Accelerator
from datasets.distributed import split_dataset_by_node
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, Subset, TensorDataset


def setup(net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return DDP(net.cuda(), device_ids=[local_rank])


def build_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset), drop_last=True)


def subset_loader(dataset, batch_size):
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = Subset(dataset, range(rank, len(dataset), world))
    return DataLoader(mine, batch_size=batch_size, shuffle=True)


def hf_loader(hf_dataset, batch_size):
    shard = split_dataset_by_node(hf_dataset, rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    return DataLoader(shard, batch_size=batch_size)


def sharded_loader(hf_dataset, batch_size):
    return DataLoader(hf_dataset.shard(num_shards=dist.get_world_size(), index=dist.get_rank()), batch_size=batch_size)


class Stream(IterableDataset):
    def __init__(self, files):
        self.files = files

    def __iter__(self):
        for path in self.files[dist.get_rank() :: dist.get_world_size()]:
            yield from torch.load(path)


def train(model, loader, epochs):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(_)
        for x, y in loader:  # <- FSD079
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()


def evaluate(model, dataset):
    loader = DataLoader(dataset, batch_size=64)
    with torch.no_grad():
        return sum(float(model(x.cuda()).sum()) for x, _ in loader)


def accelerate_main(net, dataset):
    accelerator = Accelerator()
    loader = DataLoader(dataset, batch_size=16, shuffle=True)
    model, opt, loader = accelerator.prepare(net, torch.optim.AdamW(net.parameters()), loader)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        opt.step()


def main(net, hf_dataset):
    model = setup(net)
    dataset = TensorDataset(torch.randn(64, 16), torch.randn(64, 1))
    train(model, build_loader(dataset, 32), 3)
    train(model, subset_loader(dataset, 32), 1)
    train(model, hf_loader(hf_dataset, 32), 1)
    train(model, sharded_loader(hf_dataset, 32), 1)
    train(model, DataLoader(Stream(["a.pt", "b.pt"]), batch_size=8), 1)
    evaluate(model, dataset)
    dist.destroy_process_group()
