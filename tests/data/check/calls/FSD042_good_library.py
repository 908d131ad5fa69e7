"""A library helper (no process group formed here, not a script): the caller may run it on one node only."""

import torch
import torch.distributed as dist


def bind_device():
    torch.cuda.set_device(dist.get_rank())
