"""The same helpers called after the wrap, a helper building from a module it makes itself, one given the optimizer
to rebuild, and param groups filled from something other than the model's parameters."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def make_optimizer(net, lr, weight_decay):
    decay, no_decay = [], []
    for name, param in net.named_parameters():
        (no_decay if name.endswith("bias") else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr)


def probe_optimizer(net):
    probe = torch.nn.Linear(4, 4)
    return torch.optim.SGD(probe.parameters(), lr=0.1)


def from_tensors(tensors):
    chosen = []
    for t in tensors:
        chosen.append(t)
    return torch.optim.SGD(chosen, lr=0.1)


def wrap(net, optimizer):
    return FSDP(net, use_orig_params=True)


def main(model, extra):
    dist.init_process_group("nccl")
    early = probe_optimizer(model)
    loose = from_tensors(extra)
    rebuilt = make_optimizer(model, 3e-4, 0.1)
    model = wrap(model, rebuilt)
    optimizer = make_optimizer(model, 3e-4, 0.1)
    dist.destroy_process_group()
    return early, loose, optimizer
