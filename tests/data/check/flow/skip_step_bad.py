"""Skipping a step on this rank's own NaN loss or empty batch: a DDP script, an FSDP Trainer class, an accelerate loop."""

import math
import os

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


def train_ddp(net, loader, epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            if torch.isnan(loss):
                continue  # <- FSD057
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


class Trainer:
    def __init__(self, net, loader):
        self.model = FSDP(net)
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def train_epoch(self):
        for batch in self.loader:
            if batch is None:  # the collate function drops broken samples
                continue  # <- FSD057
            loss = self.model(**batch).loss
            if not torch.isfinite(loss).all():
                print("non-finite loss, stopping")
                break  # <- FSD057
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()


def train_accelerate(model, optimizer, loader):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        if len(batch["input_ids"]) == 0:
            continue  # <- FSD057
        loss = model(**batch).loss
        if math.isnan(loss.item()):
            continue  # <- FSD057
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
