"""The optimizer built from the wrapped model; the full state dict taken on every rank."""

import os

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def wrap_model(model):
    return FSDP(model, use_orig_params=True)


def setup_model(args):
    model = torch.nn.Linear(args.dim, args.dim).cuda()
    model = FSDP(model)
    return model


def main(args, gpt):
    master_process = int(os.environ["RANK"]) == 0
    gpt = wrap_model(gpt)
    optimizer = gpt.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")
    head = setup_model(args)
    state = head.state_dict()
    if master_process:
        torch.save(state, "head.pt")
    return optimizer, gpt
