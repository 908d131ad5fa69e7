import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=False)


def wrap(block):
    return checkpoint_wrapper(block)


def forwarded(fn, *args, **kwargs):
    kwargs["use_reentrant"] = False
    return checkpoint(fn, *args, **kwargs)


def _distributed_main(module):  # the file does distributed work, so FSD027 judges the calls above
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")
    return DistributedDataParallel(module)
