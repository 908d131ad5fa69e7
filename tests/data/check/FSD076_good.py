"""FSD076, fixed: the model stays on the CPU; device_id tells FSDP1 where to compute, and each shard is offloaded."""
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
    model = FSDP(model, cpu_offload=CPUOffload(offload_params=True), device_id=torch.device("cuda", local_rank))
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    src = torch.randn(10, 4, 512, device="cuda")
    model(src, src).sum().backward()
    optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
