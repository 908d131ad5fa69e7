"""FSD084, fixed: the weights are drawn from one seed on every rank; the per-rank seed (for dropout and data order)
comes after the model is built. A second model, wrapped with HYBRID_SHARD from a per-rank seed, passes
sync_module_states=True, which broadcasts rank 0's weights before sharding."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(1234)
    model = torch.nn.Transformer(d_model=256, num_encoder_layers=2, num_decoder_layers=2)
    torch.manual_seed(1234 + dist.get_rank())
    model = FSDP(model, sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_id=local_rank)
    head = torch.nn.Linear(256, 256)
    head = FSDP(head, sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_id=local_rank, sync_module_states=True)
    opt = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-4)
    src = torch.randn(10, 4, 256, device="cuda")
    head(model(src, src)).sum().backward()
    opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
