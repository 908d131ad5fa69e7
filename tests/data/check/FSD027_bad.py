import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def forward(self, x):
        return checkpoint(self.block, x)  # <- FSD027


def wrap(block):
    return checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.REENTRANT)  # written out: a choice, as use_reentrant=True


def main():
    dist.init_process_group("nccl")
    return DDP(Net().cuda())
