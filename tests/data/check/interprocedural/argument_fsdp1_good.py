"""``save_checkpoint(model, path)`` called on every rank; only the write is on rank 0."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save_checkpoint(model, path, rank):
    state = model.state_dict()
    if rank == 0:
        torch.save(state, path)


def main(net, rank):
    model = FSDP(net.cuda())
    save_checkpoint(model, "ckpt.pt", rank)
    dist.barrier()
