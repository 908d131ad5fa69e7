"""The same step functions where the early return cannot split the ranks: the skip is agreed first (a flag
all-reduced with MIN / MAX before the test), or the return comes after the backward (what it skips is this rank's
own optimizer step on gradients every rank already reduced), or the function returning early runs no backward."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class StepTrainer:
    def __init__(self, net, local_rank):
        self.model = DDP(net.cuda(local_rank), device_ids=[local_rank])
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.device = torch.device("cuda", local_rank)

    def every_rank_has_targets(self, batch):
        flag = torch.tensor(int((batch["weight"] > 0).any()), device=self.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        return bool(flag.item())

    def compute_loss(self, batch):
        keep = batch["weight"] > 0
        return (self.model(batch["x"][keep]) * batch["weight"][keep, None]).mean()

    def train_step(self, batch):
        if not self.every_rank_has_targets(batch):
            return None  # every rank returns together
        loss = self.compute_loss(batch)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train_epoch(self, loader):
        for batch in loader:
            if not self.every_rank_has_targets(batch):
                continue
            loss = self.compute_loss(batch)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()


def step(model, batch, optimizer):
    loss = model(batch).mean()
    loss.backward()
    if torch.isnan(loss):
        return False  # after the backward: only this rank's optimizer step is skipped
    optimizer.step()
    optimizer.zero_grad()
    return True


def collate(batch):
    if len(batch) == 0:
        return None  # no backward after it in this function
    return torch.stack(batch)


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
