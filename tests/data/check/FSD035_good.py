from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=8)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for _batch in loader:
            pass
