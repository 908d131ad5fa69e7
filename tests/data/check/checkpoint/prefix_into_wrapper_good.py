"""The same loads done right: the pretrained weights go into the module (model.module) and the resume into the
module before it is wrapped; a wrapper's load of a file the script saves from the wrapper itself matches its keys."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(net, args, local_rank):
    model = DDP(net.to(local_rank), device_ids=[local_rank])
    if args.pretrained_ckpt:
        ckpt = torch.load(args.pretrained_ckpt, map_location="cpu")
        model.module.load_state_dict(ckpt["model"])
    return model


def resume(net, args, local_rank):
    state = torch.load(args.resume, map_location="cpu")
    net.load_state_dict(state)
    model = DDP(net.to(local_rank), device_ids=[local_rank])
    torch.save(model.module.state_dict(), args.out)
    return model


def wrapper_round_trip(net, path, local_rank):
    model = DDP(net.to(local_rank), device_ids=[local_rank])
    torch.save(model.state_dict(), path)
    model.load_state_dict(torch.load(path, map_location="cpu"))
