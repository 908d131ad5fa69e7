"""A training script written for GPUs (NCCL, set_device(local_rank), .cuda(), device="cuda"), as people write them.

    torchrun --nproc_per_node=2 gpu_train.py --mode ddp|fsdp2|fsdp1 [--amp none|bf16|scaler] [--steps 3 --dim 16]

``--device cpu --backend gloo`` is the CPU version of the same script (tests/test_cpu_dry.py compares the losses);
``--bug`` injects one mistake: rank0-eval (an evaluation forward on rank 0 only), rank0-collective (an all_reduce
on rank 0 only), shapes (an all_reduce of a different shape on each rank), rank0-state-dict (a full state dict
gathered on rank 0 only), early-stop (rank 0 leaves the training loop early).
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=("ddp", "fsdp2", "fsdp1"), default="ddp")
p.add_argument("--amp", choices=("none", "bf16", "scaler"), default="none")
p.add_argument("--steps", type=int, default=3)
p.add_argument("--dim", type=int, default=16)
p.add_argument("--device", default="cuda")
p.add_argument("--backend", default="nccl")
p.add_argument(
    "--bug", choices=("none", "rank0-eval", "rank0-collective", "shapes", "rank0-state-dict", "early-stop"), default="none"
)
args = p.parse_args()

dist.init_process_group(args.backend)
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ["LOCAL_RANK"])
cuda = args.device == "cuda"
if cuda:
    assert torch.cuda.is_available() and torch.cuda.device_count() >= world
    torch.cuda.set_device(local_rank)
device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(args.dim, args.dim), nn.ReLU(), nn.Linear(args.dim, 1))
if args.mode == "ddp":
    model = DDP(model.cuda() if cuda else model, device_ids=[local_rank] if cuda else None)
elif args.mode == "fsdp2":
    mesh = init_device_mesh(args.device, (world,))
    model.to(device)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
else:
    model = FSDP(model, device_id=local_rank if cuda else device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = None
if args.amp == "scaler":  # a sharded model's scaler checks every rank's shards for inf
    scaler = (torch.amp.GradScaler if args.mode == "ddp" else ShardedGradScaler)(args.device, init_scale=1024.0)

for step in range(args.steps):
    if args.bug == "early-stop" and rank == 0 and step == 1:
        break  # rank 0 stops on its own criterion; rank 1 trains on
    g = torch.Generator().manual_seed(100 + 10 * rank + step)
    x = torch.randn(8, args.dim, generator=g).to(device, non_blocking=True)
    y = torch.randn(8, 1, generator=g)
    y = y.pin_memory().cuda() if cuda else y
    with torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.amp == "bf16"):
        loss = ((model(x).float() - y) ** 2).mean()
    opt.zero_grad()
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
    total = loss.detach().clone()
    dist.all_reduce(total)
    if cuda:
        torch.cuda.current_stream().synchronize()
    print(f"rank {rank} step {step} loss {total.item() / world:.6f}", flush=True)

if args.bug == "rank0-eval" and rank == 0:
    with torch.no_grad():
        print("eval", model(torch.ones(2, args.dim, device=args.device)).sum().item())
if args.bug == "rank0-collective" and rank == 0:
    flag = torch.ones(1, device=args.device)
    dist.all_reduce(flag)
if args.bug == "rank0-state-dict" and rank == 0:
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
    torch.save(full, os.devnull)
if args.bug == "shapes":
    counts = torch.ones(rank + 1, device=args.device)
    dist.all_reduce(counts)
dist.barrier()
dist.destroy_process_group()
