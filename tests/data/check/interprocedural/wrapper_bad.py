"""Simple wrappers of an FSDP1 module: ``torch.compile`` and a helper that returns its argument moved to a device;
the wrapped module's forward (FSD010) and state dict (FSD006) on rank 0 only."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def to_device(module, device):
    return module.to(device)


def main(net, batch):
    model = FSDP(net)
    compiled = torch.compile(model)
    runner = to_device(compiled, "cuda")
    if dist.get_rank() == 0:
        print(runner(batch))  # <- FSD010
        sd = runner.state_dict()  # <- FSD006
        torch.save(sd, "model.pt")
