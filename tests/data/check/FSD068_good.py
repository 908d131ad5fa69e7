"""The forward through the wrapper; model.module for the state dict, a config attribute and evaluation."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, loader, local_rank):
    model = DDP(net.cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    vocab = model.module.config.vocab_size
    for x, y in loader:
        out = model(x.cuda())
        loss = torch.nn.functional.cross_entropy(out.view(-1, vocab), y.cuda().view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        sample = model.module(x.cuda())
    torch.save(model.module.state_dict(), "final.pt")
    return sample
