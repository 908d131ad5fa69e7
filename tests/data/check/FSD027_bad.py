import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def forward(self, x):
        return checkpoint(self.block, x)  # <- FSD027


def wrap(block):
    return checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.REENTRANT)  # <- FSD027
