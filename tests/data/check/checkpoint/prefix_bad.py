"""FSD069 through helpers and a Trainer class: the wrapper's state dict saved by one helper, loaded into the bare
model by another (in the Trainer, the wrapper's saved and its `.module` loaded)."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(model, path):
    torch.save({"model": model.state_dict(), "step": 0}, path)


def load_checkpoint(model, path):
    ckpt = torch.load(path, map_location="cpu")
    model.load_state_dict(ckpt["model"])  # <- FSD069


def build(args):
    model = torch.nn.Linear(4, 4)
    if args.resume:
        load_checkpoint(model, args.ckpt)
    ddp = DDP(model)
    return ddp


class Trainer:
    def __init__(self, net):
        self.net = net
        self.model = DDP(net)

    def save(self, path):
        if dist.get_rank() == 0:
            torch.save(self.model.state_dict(), path)

    def resume(self, path):
        self.model.module.load_state_dict(torch.load(path, map_location="cpu"))  # <- FSD069


def main(args):
    dist.init_process_group("gloo")
    ddp = build(args)
    if dist.get_rank() == 0:
        save_checkpoint(ddp, args.ckpt)
    dist.barrier()
    trainer = Trainer(torch.nn.Linear(4, 4))
    trainer.save(os.path.join(args.out, "t.pt"))
    dist.barrier()
    trainer.resume(os.path.join(args.out, "t.pt"))
    dist.destroy_process_group()
