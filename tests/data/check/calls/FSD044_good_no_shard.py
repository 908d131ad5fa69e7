"""NO_SHARD keeps every parameter whole on every rank: generate needs no gathering."""

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy


def main(base, ids):
    model = FSDP(base, sharding_strategy=ShardingStrategy.NO_SHARD)
    return model.generate(ids)
