"""A nanoGPT-style script: module-level loop, `master_process` flag, evaluation in a helper that reads the global
DDP-wrapped `model`, a stop flag set on the master process only."""

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


def estimate_loss():
    model.eval()
    X, Y = get_batch()
    loss = torch.nn.functional.mse_loss(model(X), Y)
    model.train()
    return loss.item()


best_val_loss, iter_num, stop_training = 1e9, 0, False
while True:
    if iter_num % 100 == 0 and master_process:
        val = estimate_loss()  # <- FSD045
        if val > best_val_loss * 1.5:
            break  # <- FSD037
        best_val_loss = min(best_val_loss, val)
        stop_training = val < 0.01
    if stop_training:  # <- FSD038
        break
    X, Y = get_batch()
    loss = torch.nn.functional.mse_loss(model(X), Y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
if ddp:
    dist.destroy_process_group()
