"""The same loop stepping only on the synchronising micro-batch (where the context is nullcontext()), inside the
`with` under the same test."""

from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, accum):
    model = DDP(net)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for i, batch in enumerate(loader):
        accumulating = (i + 1) % accum != 0
        ctx = model.no_sync() if accumulating else nullcontext()
        with ctx:
            loss = model(batch).mean() / accum
            loss.backward()
            if not accumulating:
                optimizer.step()
                optimizer.zero_grad()
