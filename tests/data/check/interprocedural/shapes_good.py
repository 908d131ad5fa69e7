"""The near-misses of shapes_bad.py, as correct code has them: rank 0 uses only the optimizer of ``(model,
optimizer)``, evaluates the model before the wrap or the plain EMA copies, runs the wrapped model on every rank,
and evaluates ``model.module`` / ``model_without_ddp`` (DeiT, DINO, MAE) of a DDP wrapper."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(args):
    model = FSDP(torch.nn.Linear(8, 8))
    optimizer = torch.optim.AdamW(model.parameters())
    return model, optimizer


def build(cfg):
    return torch.nn.Linear(cfg.dim, cfg.dim)


def wrap_fsdp(model, cfg):
    return FSDP(model, use_orig_params=cfg.orig)


@torch.no_grad()
def evaluate(model, loader):
    return [model(x) for x in loader]


def tuple_return(args, x):
    model, optimizer = setup(args)
    model(x).sum().backward()
    if dist.get_rank() == 0:
        print(optimizer.param_groups[0]["lr"])


def before_the_wrap(cfg, x):
    model = build(cfg)
    if dist.get_rank() == 0:
        print(model(x).shape)  # the plain module, before FSDP
    model = wrap_fsdp(model, cfg)
    return model(x)


def every_rank(cfg, val):
    model = wrap_fsdp(build(cfg), cfg)
    out = evaluate(model=model, loader=val)
    if dist.get_rank() == 0:
        print(out)


def plain_copies(cfg, ema, ema2, x):
    model = wrap_fsdp(build(cfg), cfg)
    model(x).sum().backward()
    if dist.get_rank() == 0:
        for m in [ema, ema2]:
            m(x)


def ddp_unwrapped(net, loader, val):
    model = DDP(net)
    model_without_ddp = model.module
    for x in loader:
        model(x).sum().backward()
    if dist.get_rank() == 0:
        evaluate(model_without_ddp, val)
        evaluate(model=model.module, loader=val)
