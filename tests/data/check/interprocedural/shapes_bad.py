"""Shapes real training code takes around a wrapped module (issue 23's job 2): a helper returning
``(model, optimizer)``, a build-then-wrap chain, keyword arguments, ``self.model`` set through a helper in
``__init__`` and used in another method and in a subclass, ``for m in [model, ema]``, ``args.rank % ngpus``."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


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
    if dist.get_rank() == 0:
        model(x)  # <- FSD010


def chain(cfg, x):
    model = build(cfg)
    model = wrap_fsdp(model, cfg)
    if dist.get_rank() == 0:
        model(x)  # <- FSD010


def keywords(cfg, val):
    model = wrap_fsdp(build(cfg), cfg)
    if dist.get_rank() == 0:
        evaluate(model=model, loader=val)  # <- FSD010


class Trainer:
    def __init__(self, cfg):
        self.model = wrap_fsdp(build(cfg), cfg)

    def validate(self, x):
        if dist.get_rank() == 0:
            self.model(x)  # <- FSD010


class FineTuner(Trainer):
    def check(self, x):
        if dist.get_rank() == 0:
            return evaluate(self.model, [x])  # <- FSD010
        return None


def model_and_ema(cfg, ema, x):
    model = wrap_fsdp(build(cfg), cfg)
    if dist.get_rank() == 0:
        for m in [model, ema]:
            m(x)  # <- FSD010


def rank_modulo(args, cfg, x, ngpus):
    model = wrap_fsdp(build(cfg), cfg)
    if args.rank % ngpus == 0:
        model(x)  # <- FSD010
