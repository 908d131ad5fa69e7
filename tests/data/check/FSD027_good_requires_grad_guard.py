# The reentrant variant only fails when no input requires grad; this call is guarded by exactly that test.
import torch.utils.checkpoint as cp


def forward(block, x, with_cp):
    if with_cp and x.requires_grad:
        return cp.checkpoint(block, x)
    return block(x)


def _distributed_main(module):  # the file does distributed work, so FSD027 judges the calls above
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")
    return DistributedDataParallel(module)
