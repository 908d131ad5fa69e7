import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer


def save(model):
    optim = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-3)
    if dist.get_rank() == 0:
        optim.consolidate_state_dict(to=0)  # <- FSD008
        torch.save(optim.state_dict(), "optim.pt")
