"""The same loops with the clock's verdict shared (rank 0's broadcast, or all-reduced with MAX), a fixed number of
iterations, a clock that only paces the logging, or a timed loop with nothing synchronised in it."""

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
        elapsed = time.perf_counter() - start
        stop = torch.tensor(int(elapsed > args.min_time and trial >= args.min_trials), device="cuda")
        dist.broadcast(stop, src=0)
        if stop.item():
            break
    return trial


class BudgetTrainer:
    def __init__(self, net, loader, budget_s):
        self.model = net
        fully_shard(self.model)
        self.loader = loader
        self.budget_s = budget_s
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def fit(self, max_steps):
        t0 = default_timer()
        last_log = t0
        for step, (x, y) in enumerate(self.loader):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            if default_timer() - last_log > 30:
                print(f"step {step} loss {loss.item():.3f}")
                last_log = default_timer()
            over = torch.tensor(float(default_timer() - t0 > self.budget_s))
            dist.all_reduce(over, op=dist.ReduceOp.MAX)
            if over.item() or step + 1 >= max_steps:
                break


def time_loader(loader, seconds):
    start = time.time()
    n = 0
    for _ in loader:
        n += 1
        if time.time() - start > seconds:
            break  # reads the data only: nothing the other ranks wait for
    return n
