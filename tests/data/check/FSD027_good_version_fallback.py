# The call without use_reentrant is the fallback for a torch older than 1.11, where the keyword does not exist.
import torch
import torch.utils.checkpoint
from packaging import version


def run(block, x):
    if version.parse(torch.__version__) >= version.parse("1.11"):
        return torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    else:
        return torch.utils.checkpoint.checkpoint(block, x)


def _distributed_main(module):  # the file does distributed work, so FSD027 judges the calls above
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")
    return DistributedDataParallel(module)
