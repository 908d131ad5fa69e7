"""FSD071 near-misses: rank 0 loads before the wrap (inline and in a builder helper), the parameters broadcast
after a rank-0 load, every rank loads in the Trainer, each side of the branch loads its own."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def build(path, rank):
    net = torch.nn.Linear(4, 4)
    if rank == 0:
        net.load_state_dict(torch.load(path, map_location="cpu")["model"])
    return DDP(net)


class Trainer:
    def __init__(self, net, rank):
        self.rank = rank
        self.model = DDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def load(self, path):
        ckpt = torch.load(path, map_location="cpu")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        if self.rank == 0:
            print("resumed from", path)


def main(path):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ddp = build(path, rank)
    net = torch.nn.Linear(4, 4)
    other = DDP(net)
    if rank == 0:
        net.load_state_dict(torch.load(path, map_location="cpu")["model"])
    for p in other.parameters():
        dist.broadcast(p.data, src=0)
    opt = torch.optim.AdamW(ddp.parameters())
    if rank == 0:
        opt.load_state_dict(torch.load(path, map_location="cpu")["optimizer"])
    else:
        opt.load_state_dict(torch.load(path + ".replica", map_location="cpu")["optimizer"])
    Trainer(torch.nn.Linear(4, 4), rank).load(path)
    dist.destroy_process_group()
