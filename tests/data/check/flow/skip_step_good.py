"""The same loops with the skip decided together (the flag all-reduced or gathered), or after the
synchronised work (the gradient norm, already all-reduced, is the same on every rank)."""

import os

import torch
import torch.distributed as dist
from accelerate import Accelerator
from torch.nn.parallel import DistributedDataParallel as DDP


def train_ddp(net, loader, epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = DDP(net.cuda(local_rank), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(epochs):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            bad = torch.isnan(loss).float()
            dist.all_reduce(bad, op=dist.ReduceOp.MAX)
            if bad.item():
                continue  # every rank skips together
            optimizer.zero_grad()
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if not torch.isfinite(grad_norm):
                continue  # after the all-reduce: the same norm on every rank, and only the step is skipped
            optimizer.step()
            if step % 100 == 0 and torch.isnan(loss):
                print("nan loss at", step)


def train_accelerate(model, optimizer, loader):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        loss = model(**batch).loss
        nan_anywhere = accelerator.gather(torch.isnan(loss).float()).max()
        if nan_anywhere:
            continue
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


def plain_loop(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in loader:
        if batch is None:
            continue
        model(batch).sum().backward()
        optimizer.step()


def sweep(model, loader, accelerator):
    for sync_each_batch in (False, True):  # a loop over settings, the same on every rank
        if not sync_each_batch:
            continue
        for batch in loader:
            accelerator.backward(model(batch).sum())


def split_sweep(model, loader, accelerator):
    for split_batch in (False, True):
        if not split_batch:
            continue
        for batch in loader:
            accelerator.backward(model(batch).sum())


def launch_reduces(params, model):
    model = DDP(model)
    for param in params:
        if param.grad is None:  # a fact of the model, the same on every rank
            continue
        dist.all_reduce(param.grad)


def train_gan(model, loader, accelerator, opt_g, opt_d):
    for batch in loader:
        accelerator.backward(model(batch).sum())
        grad_norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
        if torch.logical_or(grad_norm.isnan(), grad_norm.isinf()):
            opt_g.zero_grad()
            continue  # the norm of the all-reduced gradients: every rank skips together
        opt_g.step()
        accelerator.backward(model(batch).mean())
        opt_d.step()
