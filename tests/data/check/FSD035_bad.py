from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)  # <- FSD035
    loader = DataLoader(dataset, sampler=sampler, batch_size=8)
    for _ in range(epochs):
        for _batch in loader:
            pass
