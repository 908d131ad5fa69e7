"""The issue's must-show script: the sharding sits in an ``apply_fsdp(model)`` helper, with the optimizer built
BEFORE the helper call (FSD001), and the evaluation in ``evaluate(model)`` on rank 0 only (FSD010)."""

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
    model.eval()
    total = 0.0
    for x in loader:
        total += model(x).sum().item()
    model.train()
    return total


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # <- FSD001
    model = apply_fsdp(model)
    loader = [torch.randn(8, 16, device="cuda") for _ in range(4)]
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    if rank == 0:
        print("eval", evaluate(model, loader))  # <- FSD010
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
