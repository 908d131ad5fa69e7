# Rank 0 reads the full state dict of its plain, not yet sharded model (no collective runs), then every rank
# shards and receives rank 0's weights.
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict, set_model_state_dict


def prepare(model):
    full = {}
    if dist.get_rank() == 0:
        full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    prepare_fully_shard(model)
    set_model_state_dict(model, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))


def prepare_fully_shard(model):
    pass
