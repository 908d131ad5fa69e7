"""FSD085 in other shapes: a model class of the file wrapped as it is built, a torchvision model with
output_device too, and a Trainer that builds its network and wraps it in the same method."""
import os

import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


def wrap_inline(local_rank):
    return DDP(Net(), device_ids=[local_rank])  # <- FSD085


def wrap_vision(local_rank):
    net = torchvision.models.resnet18()
    return DDP(net, device_ids=[local_rank], output_device=local_rank)  # <- FSD085


class Trainer:
    def __init__(self):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        net = Net()
        self.model = DDP(net, device_ids=[self.local_rank])  # <- FSD085
