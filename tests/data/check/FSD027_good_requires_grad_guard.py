# The reentrant variant only fails when no input requires grad; this call is guarded by exactly that test.
import torch.utils.checkpoint as cp


def forward(block, x, with_cp):
    if with_cp and x.requires_grad:
        return cp.checkpoint(block, x)
    return block(x)
