"""Loads into the DDP wrapper of files that hold a bare module's keys: pretrained weights exported by a single-GPU
script (named so), and, in a second script shape, a resume from a path other than the save's while every save of the
file is of model.module."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(net, args, local_rank):
    model = DDP(net.to(local_rank), device_ids=[local_rank])
    if args.pretrained_ckpt:
        ckpt = torch.load(args.pretrained_ckpt, map_location="cpu")
        model.load_state_dict(ckpt["model"])  # <- FSD069
    return model


def resume(net, args, local_rank):
    model = DDP(net.to(local_rank), device_ids=[local_rank])
    state = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(state)  # <- FSD069
    torch.save(model.module.state_dict(), args.out)
    return model
