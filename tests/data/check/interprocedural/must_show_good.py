"""The must-show script done right: the optimizer after ``apply_fsdp``, ``evaluate`` on every rank, rank 0 prints."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(4))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def apply_fsdp(model):
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    return model


@torch.no_grad()
def evaluate(model, loader):
    return sum(model(x).sum().item() for x in loader)


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    model = apply_fsdp(Net().cuda())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = [torch.randn(8, 16, device="cuda") for _ in range(4)]
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    score = evaluate(model, loader)
    if rank == 0:
        print("eval", score)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
