"""A step function that returns early on this rank's data (an ``except`` around its loss, a NaN loss) before its
backward: called once per step, the ``return`` skips the backward (the gradient all-reduce) on this rank only, as a
``continue`` would in the loop. The loss comes from a method of the class that runs the DDP forward."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class NoTargetsError(RuntimeError):
    pass


class StepTrainer:
    def __init__(self, net, local_rank):
        self.model = DDP(net.cuda(local_rank), device_ids=[local_rank])
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def compute_loss(self, batch):
        keep = batch["weight"] > 0
        if not keep.any():
            raise NoTargetsError("no weighted sample in this micro-batch")
        return (self.model(batch["x"][keep]) * batch["weight"][keep, None]).mean()

    def train_step(self, batch):
        try:
            loss = self.compute_loss(batch)
        except NoTargetsError:
            return None  # <- FSD057
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train_epoch(self, loader):
        for batch in loader:
            try:
                loss = self.compute_loss(batch)
            except NoTargetsError:
                continue  # <- FSD057
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()


def step(model, batch, optimizer):
    loss = model(batch).mean()
    if torch.isnan(loss):
        return False  # <- FSD057
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return True


def main(net, loader):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    trainer = StepTrainer(net, local_rank)
    for batch in loader:
        trainer.train_step(batch)
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in loader:
        step(model, batch, optimizer)
    dist.destroy_process_group()
