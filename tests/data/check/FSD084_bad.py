"""FSD084: every rank seeds torch with seed + rank and then builds the model, which FSDP1 wraps with HYBRID_SHARD
and no sync_module_states: the replicas across nodes start from different weights and keep them."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(1234 + dist.get_rank())  # <- FSD084
    model = torch.nn.Transformer(d_model=256, num_encoder_layers=2, num_decoder_layers=2)
    model = FSDP(model, sharding_strategy=ShardingStrategy.HYBRID_SHARD, device_id=local_rank)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    src = torch.randn(10, 4, 256, device="cuda")
    model(src, src).sum().backward()
    opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
