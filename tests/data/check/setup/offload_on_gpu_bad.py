"""FSD076 in other shapes: FSDP(model.cuda(), ...) inline with the policy in a name, a helper moving the module it
is given, and a Trainer whose model is moved to its device (a local rank) before the wrap."""
import os

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
