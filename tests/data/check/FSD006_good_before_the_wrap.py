"""``model.state_dict()`` on some ranks before the same function wraps the model in FSDP (LLaMA2-Accessory's
main_finetune.py: each rank builds its model in turn and loads the pretrained weights through a helper that reads
``model.state_dict()``; ``model = FSDP(model, ...)`` comes later): a plain module's state dict, no collective."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def load_tensor_parallel_model_list(model, path_list, verbose=False):
    missing_keys = set(model.state_dict().keys())
    for path in path_list:
        state = torch.load(path, map_location="cpu")
        model.load_state_dict(state, strict=False)
        missing_keys -= set(state)
    return sorted(missing_keys)


def main(args):
    for i in range(dist.get_world_size()):
        if i == dist.get_rank():
            model = nn.Transformer(d_model=args.dim)
            if args.pretrained_path:
                print("load result:", load_tensor_parallel_model_list(model, args.pretrained_path))
                print("keys:", len(model.state_dict()))
        dist.barrier()
    model = FSDP(model, use_orig_params=True, device_id=torch.cuda.current_device())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    return model, optimizer
