"""The training forward through model.module: DDP never all-reduces these gradients."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, local_rank):
    model = DDP(net.cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, y in loader:
        out = model.module(x.cuda())  # <- FSD068
        loss = torch.nn.functional.cross_entropy(out, y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.module.state_dict(), "final.pt")
