# use_reentrant=True written out, after making sure the first input requires grad: a deliberate choice.
import torch.utils.checkpoint as cp


def forward(block, feat):
    feat.requires_grad = True
    return cp.checkpoint(block, feat, use_reentrant=True)


def _distributed_main(module):  # the file does distributed work, so FSD027 judges the calls above
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("nccl")
    return DistributedDataParallel(module)
