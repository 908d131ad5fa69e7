"""FSD076: CPU offload asked for, but the model is moved to the GPU first: FSDP1 shards it there and only then
moves each shard to the CPU, so the whole model must fit on the GPU at the wrap."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = torch.nn.Transformer(d_model=512)
    model = model.to(torch.device("cuda", local_rank))  # <- FSD076
    model = FSDP(model, cpu_offload=CPUOffload(offload_params=True))
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    src = torch.randn(10, 4, 512, device="cuda")
    model(src, src).sum().backward()
    optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
