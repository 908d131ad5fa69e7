# Pattern from https://github.com/pytorch/pytorch/issues/122903: FSDP1 save with FullStateDictConfig(rank0_only=True)
# hangs because state_dict() is called on rank 0 only. Our code, details replaced.
import torch
import torch.nn as nn
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def load_and_save(rank, model: nn.Module):
    fsdp_model = FSDP(model, device_id=torch.device(f"cuda:{rank}"))
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(fsdp_model, StateDictType.FULL_STATE_DICT, cfg):
        if rank == 0:
            torch.save(fsdp_model.state_dict(), "out/full.pt")  # <- FSD006
