"""The wrapped module used on every rank; rank 0 prints and writes."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def to_device(module, device):
    return module.to(device)


def main(net, batch):
    model = FSDP(net)
    compiled = torch.compile(model)
    runner = to_device(compiled, "cuda")
    out = runner(batch)
    sd = runner.state_dict()
    if dist.get_rank() == 0:
        print(out)
        torch.save(sd, "model.pt")
