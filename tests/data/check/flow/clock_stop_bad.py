"""Loops that stop on this rank's own wall clock (a benchmark's minimum time, a training time budget): each rank
reads its own clock, so one can leave after N iterations while the others go on to the next all-reduce."""

import time
from timeit import default_timer

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP


def benchmark(arch_fn, args, local_rank):
    model = DDP(arch_fn().cuda(), device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    xs = torch.randn(args.batch_size, 3, 224, 224, device="cuda")
    start = time.perf_counter()
    for trial in range(args.max_trials):
        optimizer.zero_grad()
        model(xs).sum().backward()
        optimizer.step()
        torch.cuda.synchronize()
        now = time.perf_counter()
        elapsed = now - start
        if elapsed > args.min_time and trial >= args.min_trials:
            break  # <- FSD058
    return trial


class BudgetTrainer:
    def __init__(self, net, loader, budget_s):
        self.model = net
        fully_shard(self.model)
        self.loader = loader
        self.budget_s = budget_s
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def fit(self):
        t0 = default_timer()
        for x, y in self.loader:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            if default_timer() - t0 > self.budget_s:
                break  # <- FSD058


def train(model, loader, deadline):
    dist.init_process_group("nccl")
    model = DDP(model.cuda())
    for batch in loader:
        model(batch).mean().backward()
        if time.time() > deadline:
            break  # <- FSD058
