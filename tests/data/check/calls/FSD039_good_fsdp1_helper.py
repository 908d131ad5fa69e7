"""The FULL_STATE_DICT gather on every rank, the write on rank 0; and a rank-0 state_dict() that FSD006 already
reports is not reported again."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from mylib import build_sharded_model


def main(net):
    dist.init_process_group("nccl")
    model = build_sharded_model()
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        sd = model.state_dict()
    if dist.get_rank() == 0:
        torch.save(sd, "model.pt")
    wrapped = FSDP(net)
    if dist.get_rank() == 0:
        with FSDP.state_dict_type(wrapped, StateDictType.FULL_STATE_DICT, cfg):
            torch.save(wrapped.state_dict(), "w.pt")  # FSD006 reports this one
    dist.destroy_process_group()
