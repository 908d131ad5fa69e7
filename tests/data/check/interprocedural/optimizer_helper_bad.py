"""The optimizer built by a helper from the parameters of the model it is given (param groups filled in a loop, as
nanoGPT-style weight-decay splits do; a submodule's parameters), before another helper wraps the model."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def make_optimizer(net, lr, weight_decay):
    decay, no_decay = [], []
    for name, param in net.named_parameters():
        (no_decay if name.endswith("bias") else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr)


def head_optimizer(net):
    return torch.optim.SGD(net.head.parameters(), lr=0.1)


def wrap(net):
    return FSDP(net, use_orig_params=True)


def main(model):
    dist.init_process_group("nccl")
    optimizer = make_optimizer(model, 3e-4, 0.1)  # <- FSD002
    probe = head_optimizer(model)  # <- FSD002
    model = wrap(model)
    dist.destroy_process_group()
    return optimizer, probe
