# Pattern from https://github.com/intelligent-machine-learning/dlrover/issues/584 (fixed by PR 585):
# nanoGPT with FSDP, the optimizer was built before wrapping, so the loss never went down. Our code, details replaced.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def train():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 64)).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)  # <- FSD002
    model = FSDP(model, device_id=local_rank)
    for _ in range(10):
        loss = model(torch.randn(8, 64, device="cuda")).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
