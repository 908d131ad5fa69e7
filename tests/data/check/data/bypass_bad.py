"""The training forward around the wrapper: in a Trainer through the module kept beside the wrapper, and inline
through model.module.forward."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, local_rank):
        self.net = net.cuda()
        self.model = DDP(self.net, device_ids=[local_rank])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train_step(self, x, y):
        out = self.net(x)  # <- FSD068
        loss = torch.nn.functional.mse_loss(out, y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


def train(net, loader, local_rank):
    ddp_model = DDP(net, device_ids=[local_rank])
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(ddp_model.module.forward(x), y)  # <- FSD068
        opt.zero_grad()
        loss.backward()
        opt.step()
