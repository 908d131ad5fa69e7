"""FSD076 in other shapes: FSDP(model.cuda(), ...) inline with the policy in a name, a helper moving the module it
is given, a Trainer whose model is moved to its device (a local rank) before the wrap, and a builder whose name is
bound from the move (``model = Net().to(device)``), and a wrapping helper given a module its caller moved."""
import os

import torch
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

OFFLOAD = CPUOffload(offload_params=True)


def shard(model):
    return FSDP(model.cuda(), cpu_offload=OFFLOAD)  # <- FSD076


class Trainer:
    def __init__(self, net):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        net.to(self.local_rank)  # <- FSD076
        self.model = FSDP(net, cpu_offload=CPUOffload(True), device_id=self.local_rank)


def build(local_rank):
    device = torch.device("cuda", local_rank)
    model = torch.nn.Transformer(d_model=64).to(device)  # <- FSD076
    return FSDP(model, cpu_offload=OFFLOAD)


def offload(module):
    return FSDP(module, cpu_offload=OFFLOAD)


def run(local_rank):
    net = torch.nn.Linear(8, 8)
    net.to(torch.device("cuda", local_rank))  # <- FSD076
    return offload(net)
