"""A model file that does no distributed work itself; train.py of the same project wraps it in DDP, so the
implicit reentrant checkpoint matters here (FSD027 when the project is checked; silent when this file is alone)."""

import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ff = nn.Linear(8, 8)

    def forward(self, x):
        return checkpoint(self.ff, x)  # <- FSD027
