"""The same code, right: the wrapper trains; the module inside it only saves, evaluates (no backward, or under
no_grad), feeds the optimizer its parameter groups, or updates an EMA copy by hand."""

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


def evaluate(loader, net, device):
    net.eval()
    total = 0.0
    for x, y in loader:
        total += F.mse_loss(net(x.to(device)), y.to(device)).item()
    return total


def ema_update(ema, net, decay=0.99):
    with torch.no_grad():
        for e, p in zip(ema.parameters(), net.parameters()):
            e.mul_(decay).add_(p, alpha=1 - decay)


def fit(model, ema, opt, loader, sampler, device, epochs):
    core = model.module if hasattr(model, "module") else model
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        train_epoch(loader, model, opt, device)
        ema_update(ema, core)
        print(evaluate(loader, core, device))
        with torch.no_grad():
            evaluate(loader, model.module, device)
        if dist.get_rank() == 0:
            torch.save(core.state_dict(), f"epoch{epoch}.pt")


class Trainer:
    def __init__(self, model, loader, local_rank):
        self.model = DDP(model.cuda(local_rank), device_ids=[local_rank])
        self.loader = loader
        decay = [p for n, p in self.model.module.named_parameters() if "bias" not in n]
        self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}], lr=1e-3)

    def run_epoch(self, module):
        for x, y in self.loader:
            self.opt.zero_grad()
            F.cross_entropy(module.forward(x.cuda()), y.cuda()).backward()
            self.opt.step()

    def fit(self, epochs):
        for _ in range(epochs):
            self.run_epoch(self.model)
        return self.model.module.state_dict()


def step_inline(model, x, y, opt):
    model_without_ddp = model.module
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    return model_without_ddp.state_dict()


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = wrap(torch.nn.Linear(8, 1), device)
    ema = torch.nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.randn(4, 1))]
    fit(model, ema, opt, data, torch.utils.data.distributed.DistributedSampler(range(4)), device, 2)
    step_inline(model, data[0][0].to(device), data[0][1].to(device), opt)
    Trainer(torch.nn.Linear(8, 2), [(torch.randn(4, 8), torch.tensor([0, 1, 0, 1]))], local_rank).fit(1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
