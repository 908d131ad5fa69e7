"""FSD076, the same shapes fixed: the module stays on the CPU (device_id places the computation), a move to the GPU
without offload, offload_params=False, and a wrapping helper whose caller keeps the module on the CPU (and moves
another module, which it does not wrap)."""
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


def offload(module):
    return FSDP(module, cpu_offload=OFFLOAD, device_id=torch.cuda.current_device())


def run(local_rank):
    net = torch.nn.Linear(8, 8)
    head = torch.nn.Linear(8, 8)
    head.to(torch.device("cuda", local_rank))
    return offload(net), head
