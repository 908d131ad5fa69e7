"""The same resume from a shared path that every rank sees: the answer is the same on every rank."""

import os

import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def resume(state, output_dir):
    ckpt = os.path.join(output_dir, "ckpt")
    if os.path.exists(ckpt):
        dcp.load(state, checkpoint_id=ckpt)
    dist.barrier()
