"""FSDP1 with NO_SHARD only (every rank keeps whole parameters): summon_full_params gathers nothing, so entering it
on rank 0 alone waits for no one (an earlier shape of FSD081 would have flagged it)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy


def main(build):
    dist.init_process_group("nccl")
    model = FSDP(build(), sharding_strategy=ShardingStrategy.NO_SHARD, device_id=torch.cuda.current_device())
    if dist.get_rank() == 0:
        with FSDP.summon_full_params(model):
            print(sum(p.numel() for p in model.parameters()))
    dist.destroy_process_group()
