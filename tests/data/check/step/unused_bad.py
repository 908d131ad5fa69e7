"""FSD077 shapes: a submodule never used in forward (through a wrapping helper), an early return before a block
(a Trainer holding the model in self.), a parameter used in one arm of a conditional expression (set up in main)."""
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.embed = nn.Linear(d, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.pooler = nn.Linear(d, d)  # left from an older version

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return x


class EarlyExit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.first = Block(d)
        self.second = Block(d)

    def forward(self, x):
        x = self.first(x)
        if x.norm() > 10:
            return x
        return self.second(x)


class Scaled(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, x, scaled=True):
        y = self.proj(x)
        return y * self.scale if scaled else y


def wrap(model, rank):
    return DDP(model, device_ids=None)  # <- FSD077


class Trainer:
    def __init__(self, model):
        self.model = model
        self.model = DDP(self.model, find_unused_parameters=False)  # <- FSD077

    def step(self, x):
        self.model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    encoder = wrap(Encoder(8), rank)
    trainer = Trainer(EarlyExit(8))
    scaled = DDP(Scaled(8).to("cpu"))  # <- FSD077
    for _ in range(3):
        encoder(torch.randn(2, 8)).sum().backward()
        trainer.step(torch.randn(2, 8))
        scaled(torch.randn(2, 8), scaled=False).sum().backward()


if __name__ == "__main__":
    main()
