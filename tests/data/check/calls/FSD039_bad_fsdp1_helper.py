"""FSDP1 sharded in a helper, so FSD006 cannot tell the module is FSDP; the FULL_STATE_DICT context says it is,
and the state_dict() inside it (an all-gather) runs on rank 0 only."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from mylib import build_sharded_model


def main():
    dist.init_process_group("nccl")
    model = build_sharded_model()
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    if dist.get_rank() == 0:
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
            torch.save(model.state_dict(), "model.pt")  # <- FSD039
    dist.destroy_process_group()
