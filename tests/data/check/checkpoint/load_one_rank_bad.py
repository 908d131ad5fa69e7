"""FSD071 in a Trainer keeping the DDP wrapper in self.model, through a resume helper given the wrapper, and
into the module handed to DDP(...) earlier."""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def resume(model, optimizer, path, rank):
    if rank == 0:
        ckpt = torch.load(path, map_location="cpu")
        model.load_state_dict(ckpt["model"])  # <- FSD071
        optimizer.load_state_dict(ckpt["optimizer"])  # <- FSD071


class Trainer:
    def __init__(self, net, rank):
        self.rank = rank
        self.model = DDP(net)
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def load(self, path):
        if self.rank == 0:
            self.model.load_state_dict(torch.load(path, map_location="cpu"))  # <- FSD071


def main(path):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    net = torch.nn.Linear(4, 4)
    ddp = DDP(net)
    opt = torch.optim.AdamW(ddp.parameters())
    resume(ddp, opt, path, rank)
    if rank == 0:
        net.load_state_dict(torch.load(path, map_location="cpu")["model"])  # <- FSD071
    Trainer(torch.nn.Linear(4, 4), rank).load(path)
    dist.destroy_process_group()
