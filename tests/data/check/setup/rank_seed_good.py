"""FSD084, shapes that are right: one seed for the weights and a per-rank seed afterwards (HSDP), a per-rank seed
before wrappers that keep no replicas (FSDP1 FULL_SHARD, fully_shard on a 1-D mesh: each value has one owner) or
that broadcast (DDP, FSDP1 with sync_module_states=True), and a generator seeded per rank only for data."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP


def seed_all(seed):
    torch.manual_seed(seed)


def hsdp_same_seed(world, rank):
    mesh = init_device_mesh("cuda", (world // 8, 8), mesh_dim_names=("replicate", "shard"))
    seed_all(7)
    model = nn.Linear(64, 64)
    seed_all(7 + rank)
    fully_shard(model, mesh=mesh)
    return model


def full_shard(rank):
    torch.manual_seed(7 + rank)
    model = nn.Linear(64, 64)
    return FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD, device_id=torch.cuda.current_device())


def one_dim(world, rank):
    mesh = init_device_mesh("cuda", (world,))
    torch.manual_seed(7 + rank)
    model = nn.Linear(64, 64)
    fully_shard(model, mesh=mesh)
    return model


def ddp(rank):
    torch.manual_seed(7 + rank)
    return DDP(nn.Linear(64, 64).cuda(), device_ids=[torch.cuda.current_device()])


def hybrid_synced(rank):
    torch.manual_seed(7 + rank)
    model = nn.Linear(64, 64)
    return FSDP(
        model,
        sharding_strategy=ShardingStrategy.HYBRID_SHARD,
        sync_module_states=True,
        device_id=torch.cuda.current_device(),
    )


def data_noise(world, rank):
    mesh = init_device_mesh("cuda", (world // 8, 8), mesh_dim_names=("replicate", "shard"))
    model = nn.Linear(64, 64)
    fully_shard(model, mesh=mesh)
    gen = torch.Generator().manual_seed(11 + dist.get_rank())
    return model, torch.randn(4, 64, generator=gen)
