"""The nanoGPT-style script done right: evaluation on every rank (logged on the master), the stop decision taken
from an all-reduced value, so every rank leaves the loop at the same iteration."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group(backend="nccl")
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    master_process = ddp_rank == 0
    torch.cuda.set_device(ddp_local_rank)
else:
    master_process = True
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8)).cuda()
optimizer = torch.optim.AdamW(model.parameters())
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])


def get_batch():
    return torch.randn(4, 8).cuda(), torch.randn(4, 8).cuda()


@torch.no_grad()
def estimate_loss():
    model.eval()
    X, Y = get_batch()
    loss = torch.nn.functional.mse_loss(model(X), Y)
    if ddp:
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    model.train()
    return loss.item()


best_val_loss, iter_num = 1e9, 0
while True:
    if iter_num % 100 == 0:
        val = estimate_loss()
        if master_process:
            print(f"step {iter_num}: val loss {val:.4f}")
        if val > best_val_loss * 1.5 or val < 0.01:
            break
        best_val_loss = min(best_val_loss, val)
    X, Y = get_batch()
    loss = torch.nn.functional.mse_loss(model(X), Y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
if ddp:
    dist.destroy_process_group()
