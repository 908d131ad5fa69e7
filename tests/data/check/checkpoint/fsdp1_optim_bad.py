"""FSD072 in a Trainer class: an FSDP1 model's optimizer state resumed from one torch.save file as it is."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def __init__(self, net):
        self.model = FSDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)

    def resume(self, path):
        state = torch.load(path, map_location="cpu")
        self.optimizer.load_state_dict(state["optimizer"])  # <- FSD072


def main():
    dist.init_process_group("gloo")
    trainer = Trainer(torch.nn.Linear(4, 4))
    trainer.resume(os.path.join("ckpt", "last.pt"))
    dist.destroy_process_group()
