"""A plain model file with an implicit reentrant checkpoint, checked alone: it does no distributed work, so the
DDP/FSDP risk FSD027 names does not apply here (silent)."""

import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ff = nn.Linear(8, 8)

    def forward(self, x):
        return checkpoint(self.ff, x)
