"""The same loops where the ``except`` cannot split the ranks: the skip is agreed first (a flag all-reduced before
the loss), the handler ends the loader (``StopIteration``) or re-raises, the work it skips is this rank's own
(no wrapped model), or the backward sits inside the ``try`` with nothing synchronised after it."""

import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


def usable(batch):
    return bool((batch["mask"].sum(dim=1) > 4).any())


def masked_loss(model, batch):
    keep = batch["mask"].sum(dim=1) > 4
    return model(batch["x"][keep]).mean()


def train_ddp(net, loader, epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(epochs):
        for batch in loader:
            ok = torch.tensor(int(usable(batch)), device=local_rank)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            if ok.item() == 0:
                continue  # every rank skips together
            loss = masked_loss(model, batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


def train_steps(model, loader, steps):
    model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    it = iter(loader)
    for _ in range(steps):
        try:
            batch = next(it)
        except StopIteration:
            break  # the sampler gives every rank the same number of batches
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()


class Trainer:
    def __init__(self, net, loader):
        self.model = FSDP(net)
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def train_epoch(self):
        for inputs, labels in self.loader:
            try:
                loss = torch.nn.functional.cross_entropy(self.model(inputs), labels)
            except ValueError as err:
                raise RuntimeError("bad batch") from err
            loss.backward()
            self.optimizer.step()


def tokenize_all(tokenizer, records):
    out = []
    for record in records:
        try:
            ids = tokenizer(record["text"])
        except KeyError:
            continue  # preprocessing on one rank: nothing synchronised in the loop
        out.append(ids)
    return out
