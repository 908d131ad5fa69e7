"""FSDP1 training that exports the full weights and logs parameter norms from rank 0 only. summon_full_params
all-gathers the flat parameters on every rank, rank0_only=True included, so rank 0 waits for ranks that went on."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def export_weights(model, path):
    with FSDP.summon_full_params(model, rank0_only=True, writeback=False):
        torch.save({k: v.clone() for k, v in model.named_parameters()}, path)


def log_norms(model, step):
    if dist.get_rank() != 0:
        return
    with model.summon_full_params(model, with_grads=True):  # <- FSD081
        print(step, sum(p.norm().item() for p in model.parameters()))


def main(build):
    dist.init_process_group("nccl")
    model = FSDP(build(), device_id=torch.cuda.current_device())
    opt = torch.optim.AdamW(model.parameters())
    for step in range(100):
        model(torch.randn(8, 16, device="cuda")).sum().backward()
        log_norms(model, step)
        opt.step()
        opt.zero_grad()
    if dist.get_rank() == 0:
        export_weights(model, "final.pt")  # <- FSD081
    dist.destroy_process_group()
