"""A micro-batch that raises on this rank only (no usable sample, a bad record) and is skipped in the ``except``:
this rank leaves out the backward whose gradient all-reduce the other ranks wait in. Inline DDP, a helper that
takes the wrapped model, an FSDP Trainer class, an accelerate loop."""

import os

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


class EmptyBatchError(ValueError):
    pass


def masked_loss(model, batch):
    keep = batch["mask"].sum(dim=1) > 4
    if not keep.any():
        raise EmptyBatchError("no row of this micro-batch is long enough")
    return model(batch["x"][keep]).mean()


def train_ddp(net, loader, epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(epochs):
        for batch in loader:
            batch = {k: v.cuda(local_rank) for k, v in batch.items()}
            try:
                loss = masked_loss(model, batch)
            except EmptyBatchError:
                continue  # <- FSD057
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


class Trainer:
    def __init__(self, net, loader):
        self.model = FSDP(net)
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def train_epoch(self):
        for inputs, labels in self.loader:
            try:
                logits = self.model(inputs)
                loss = torch.nn.functional.cross_entropy(logits, labels)
            except (ValueError, IndexError) as err:
                print("skipping a bad batch:", err)
                continue  # <- FSD057
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()


def train_accelerate(model, optimizer, loader):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        try:
            loss = model(**batch).loss
        except RuntimeError:
            continue  # <- FSD057
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
