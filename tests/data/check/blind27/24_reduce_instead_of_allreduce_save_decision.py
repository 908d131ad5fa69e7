import functools
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy


def build_model():
    layers = [nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024)) for _ in range(12)]
    return nn.Sequential(*layers, nn.Linear(1024, 1000))


def train_epoch(model, opt, rank, steps=200):
    model.train()
    for _ in range(steps):
        x = torch.randn(32, 1024, device=rank)
        y = torch.randint(0, 1000, (32,), device=rank)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


@torch.no_grad()
def validation(model, rank, world_size, steps=50):
    model.eval()
    fsdp_loss = torch.zeros(2, device=rank)
    for _ in range(steps):
        x = torch.randn(32, 1024, device=rank)
        y = torch.randint(0, 1000, (32,), device=rank)
        fsdp_loss[0] += nn.functional.cross_entropy(model(x), y)
        fsdp_loss[1] += 1
    dist.reduce(fsdp_loss, 0, op=dist.ReduceOp.SUM)
    return (fsdp_loss[0] / fsdp_loss[1]).item()


def save_model_checkpoint(model, rank, epoch):
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        cpu_state = model.state_dict()
    if rank == 0:
        torch.save(cpu_state, f"model-epoch{epoch}.pt")


def fsdp_main():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    world_size = dist.get_world_size()
    torch.cuda.set_device(rank)
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=1_000_000)
    model = FSDP(build_model(), auto_wrap_policy=policy, device_id=rank)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    best_val_loss = float("inf")
    for epoch in range(1, 11):
        train_epoch(model, opt, rank)
        curr_val_loss = validation(model, rank, world_size)
        if curr_val_loss < best_val_loss:
            best_val_loss = curr_val_loss
            save_model_checkpoint(model, rank, epoch)
    dist.destroy_process_group()


if __name__ == "__main__":
    fsdp_main()
