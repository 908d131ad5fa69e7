"""nanoGPT-style: ``optimizer = model.configure_optimizers(...)`` before a helper wraps the model with FSDP1
(FSD002); ``model = setup_model(args)`` returns an FSDP1 module whose state_dict is taken on rank 0 (FSD006)."""

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
    optimizer = gpt.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")  # <- FSD002
    gpt = wrap_model(gpt)
    head = setup_model(args)
    if master_process:
        torch.save(head.state_dict(), "head.pt")  # <- FSD006
    return optimizer, gpt
