"""A plain module (no wrapper) whose gradients are averaged by hand: the all-reduce is the synchronisation."""

import torch
import torch.distributed as dist


def train(net, loader):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        for p in net.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= dist.get_world_size()
        opt.step()
