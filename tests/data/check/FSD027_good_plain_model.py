"""A plain model file (no distributed work): the reentrant checkpoint's DDP/FSDP risk does not apply here, so FSD027
stays silent (issue 23: its findings in such files were all noise). FSD027_bad.py is the same model under DDP."""

import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def forward(self, x):
        return checkpoint(self.block, x)


def wrap(block):
    return checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.REENTRANT)
