"""An FSDP1 module passed to ``save_checkpoint(model, path)`` on rank 0 only: its ``state_dict()`` gathers the
full parameters from every rank (FSD006)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def save_checkpoint(model, path):
    state = model.state_dict()
    torch.save(state, path)


def main(net, rank):
    model = FSDP(net.cuda())
    if rank == 0:
        save_checkpoint(model, "ckpt.pt")  # <- FSD006
    dist.barrier()
