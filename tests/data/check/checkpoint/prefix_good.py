"""FSD069 near-misses: the inner module saved, the wrapper loaded with
strict=False on purpose, a checkpoint of another path, the Trainer saving and loading the same side."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(model, path):
    torch.save({"model": model.module.state_dict(), "step": 0}, path)


def load_checkpoint(model, path):
    ckpt = torch.load(path, map_location="cpu")
    model.load_state_dict(ckpt["model"])


def build(args):
    model = torch.nn.Linear(4, 4)
    if args.resume:
        load_checkpoint(model, args.ckpt)
    if args.pretrained:
        model.load_state_dict(torch.load(args.pretrained, map_location="cpu"))  # another file
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
        self.model.load_state_dict(torch.load(path, map_location="cpu"))

    def resume_inner(self, path):
        self.model.module.load_state_dict(torch.load(path + ".inner", map_location="cpu"))

    def export(self, path):
        self.net.load_state_dict(torch.load(path, map_location="cpu"), strict=False)


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
    trainer.export(os.path.join(args.out, "t.pt"))
    dist.destroy_process_group()
