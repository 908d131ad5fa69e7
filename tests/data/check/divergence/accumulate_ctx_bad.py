"""DDP accumulation with the context picked per micro-batch (`ctx = model.no_sync() if ... else nullcontext()`)
but the optimizer step left inside the `with` on every micro-batch: on the accumulating ones it steps on gradients
that were never all-reduced (each replica its own), so the replicas drift apart."""

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
            optimizer.step()  # <- FSD040
            optimizer.zero_grad()
