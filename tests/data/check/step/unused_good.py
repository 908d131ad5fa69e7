"""FSD077 near-misses, one edit from unused_bad.py: the pooler is used, the early exit keeps both blocks used
(and a head used only in training: no backward runs in evaluation), the unused part is frozen before the wrap,
the parameter is used in both arms; and a forward that reaches its blocks through getattr (the file cannot tell)."""
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
        self.pooler = nn.Linear(d, d)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.pooler(x)


class EarlyExit(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.first = Block(d)
        self.second = Block(d)
        self.aux = nn.Linear(d, 1)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.dropout(self.first(x))
        if self.training:
            x = x + self.aux(x)
        if x.norm() > 10:
            return self.second(x) * 0.5
        return self.second(x)


class Frozen(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.unused_head = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x)


class Scaled(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, x, scaled=True):
        y = self.proj(x)
        return y * self.scale if scaled else y * self.scale.detach() * 0 + y * self.scale


class Named(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layer0 = nn.Linear(d, d)
        self.layer1 = nn.Linear(d, d)

    def forward(self, x):
        for i in range(2):
            x = getattr(self, f"layer{i}")(x)
        return x


def wrap(model, rank):
    return DDP(model, device_ids=None)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.model = DDP(self.model, find_unused_parameters=False)

    def step(self, x):
        self.model(x).sum().backward()


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    encoder = wrap(Encoder(8), rank)
    trainer = Trainer(EarlyExit(8))
    frozen = Frozen(8)
    frozen.unused_head.requires_grad_(False)
    frozen = DDP(frozen)
    scaled = DDP(Scaled(8).to("cpu"))
    named = DDP(Named(8))
    for _ in range(3):
        encoder(torch.randn(2, 8)).sum().backward()
        trainer.step(torch.randn(2, 8))
        frozen(torch.randn(2, 8)).sum().backward()
        scaled(torch.randn(2, 8), scaled=False).sum().backward()
        named(torch.randn(2, 8)).sum().backward()


if __name__ == "__main__":
    main()
