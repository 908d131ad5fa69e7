# use_reentrant=True written out, after making sure the first input requires grad: a deliberate choice.
import torch.utils.checkpoint as cp


def forward(block, feat):
    feat.requires_grad = True
    return cp.checkpoint(block, feat, use_reentrant=True)
