"""FSD046 stays silent: each accumulating micro-batch runs its forward inside no_sync() as well as its backward, so
DDP skips their all-reduce; the last micro-batch syncs outside it."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def accumulate(net, micro_batches, lr=0.1):
    model = DDP(net)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    *early, last = micro_batches
    for x, y in early:
        with model.no_sync():
            out = model(x)
            torch.nn.functional.cross_entropy(out, y).backward()
    x, y = last
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
