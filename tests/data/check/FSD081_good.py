"""The same FSDP1 run done right: every rank enters summon_full_params (rank0_only=True keeps the full values on
rank 0 only) and only the writing and printing are under the rank test."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def export_weights(model, path):
    with FSDP.summon_full_params(model, rank0_only=True, writeback=False):
        if dist.get_rank() == 0:
            torch.save({k: v.clone() for k, v in model.named_parameters()}, path)


def log_norms(model, step):
    with model.summon_full_params(model, with_grads=True):
        total = sum(p.norm().item() for p in model.parameters())
    if dist.get_rank() == 0:
        print(step, total)


def main(build):
    dist.init_process_group("nccl")
    model = FSDP(build(), device_id=torch.cuda.current_device())
    opt = torch.optim.AdamW(model.parameters())
    for step in range(100):
        model(torch.randn(8, 16, device="cuda")).sum().backward()
        log_norms(model, step)
        opt.step()
        opt.zero_grad()
    export_weights(model, "final.pt")
    dist.destroy_process_group()
