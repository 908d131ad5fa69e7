"""FSD084 in other shapes: a model that initialises its own shards after fully_shard on an HSDP mesh from a
generator seeded with seed + rank, a seeding helper given seed + rank before FSDP1 NO_SHARD whose options come
from a helper (sync_module_states only when a checkpoint is loaded), and transformers' set_seed with the local
rank before fully_shard on a mesh sliced to (replicate, shard)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, fully_shard
from transformers import set_seed


class Net(nn.Module):
    def __init__(self, seed):
        super().__init__()
        self.seed = seed
        self.proj = nn.Linear(64, 64)

    def init_weights(self):
        gen = torch.Generator().manual_seed(self.seed + dist.get_rank())  # <- FSD084
        for p in self.parameters():
            local = p.to_local() if hasattr(p, "to_local") else p
            with torch.no_grad():
                local.normal_(0.0, 0.02, generator=gen)


def seed_all(seed):
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def fsdp_options(cfg):
    return {"sharding_strategy": ShardingStrategy.NO_SHARD, "sync_module_states": cfg["resume"] is not None}


def hsdp(world):
    mesh = init_device_mesh("cuda", (world // 8, 8), mesh_dim_names=("replicate", "shard"))
    model = Net(seed=7)
    fully_shard(model, mesh=mesh)
    model.init_weights()
    return model


def no_shard(cfg, rank):
    seed_all(cfg["seed"] + rank)  # <- FSD084
    model = nn.Transformer(d_model=64)
    return FSDP(model, device_id=torch.cuda.current_device(), **fsdp_options(cfg))


def sliced(world_mesh):
    set_seed(42 + int(os.environ["LOCAL_RANK"]))  # <- FSD084
    model = nn.Linear(64, 64)
    fully_shard(model, mesh=world_mesh["dp_replicate", "dp_shard"])
    return model
