"""The module inside the wrapper handed on for training: through a name bound to the conditional unwrap, to a
training helper; a Trainer passing self.model.module to its epoch method; and inline through a name bound to
model.module. Each backward then runs without the wrapper's gradient all-reduce."""

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def wrap(model, device):
    model = model.to(device)
    if dist.is_initialized():
        model = DDP(model, device_ids=[device.index])
    return model


def train_epoch(loader, net, opt, device):
    net.train()
    for x, y in loader:
        opt.zero_grad()
        loss = F.mse_loss(net(x.to(device)), y.to(device))
        loss.backward()
        opt.step()


def fit(model, opt, loader, sampler, device, epochs):
    core = model.module if hasattr(model, "module") else model
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        train_epoch(loader, core, opt, device)  # <- FSD068


class Trainer:
    def __init__(self, model, loader, local_rank):
        self.model = DDP(model.cuda(local_rank), device_ids=[local_rank])
        self.loader = loader
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)

    def run_epoch(self, module):
        for x, y in self.loader:
            self.opt.zero_grad()
            F.cross_entropy(module.forward(x.cuda()), y.cuda()).backward()
            self.opt.step()

    def fit(self, epochs):
        for _ in range(epochs):
            self.run_epoch(self.model.module)  # <- FSD068


def step_inline(model, x, y, opt):
    net = model.module
    out = net(x)  # <- FSD068
    loss = F.mse_loss(out, y)
    loss.backward()
    opt.step()


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = wrap(torch.nn.Linear(8, 1), device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.randn(4, 1))]
    fit(model, opt, data, torch.utils.data.distributed.DistributedSampler(range(4)), device, 2)
    step_inline(model, data[0][0].to(device), data[0][1].to(device), opt)
    Trainer(torch.nn.Linear(8, 2), [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))], local_rank).fit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
