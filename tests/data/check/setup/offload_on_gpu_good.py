"""FSD076, the same shapes fixed: the module stays on the CPU (device_id places the computation), a move to the GPU
without offload, and offload_params=False."""
import os

import torch
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

OFFLOAD = CPUOffload(offload_params=True)


def shard(model):
    return FSDP(model, cpu_offload=OFFLOAD, device_id=torch.cuda.current_device())


def shard_on_gpu(model):
    return FSDP(model.cuda(), cpu_offload=CPUOffload(offload_params=False))


class Trainer:
    def __init__(self, net):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        net.to(torch.float32)
        self.model = FSDP(net, cpu_offload=CPUOffload(True), device_id=self.local_rank)
