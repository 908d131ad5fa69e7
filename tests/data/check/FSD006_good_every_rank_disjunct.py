"""A composer-style checkpoint test: rank 0 alone for a full checkpoint, every rank for a sharded one; the sharded
load and the optimizer state dict run under `if state_dict_type == "sharded"`, which every rank enters."""

import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def check_reload(model, optim, state_dict, state_dict_type, reader, new_version):
    if (dist.get_rank() == 0 and state_dict_type == "full") or state_dict_type == "sharded":
        if state_dict_type == "sharded" and new_version:
            dcp.load(state_dict=state_dict, storage_reader=reader)
            osd = FSDP.optim_state_dict(model, optim)
            state_dict["optimizers"] = osd
        else:
            print(state_dict["model"].keys())
