"""FSD074 in the shapes real scripts take: an mp.spawn worker that hard-codes .cuda(0) and device_ids=[0], a
torch.load onto GPU 0, a helper given the model, a Trainer keeping its device in a module-level constant, and a
bare .cuda() in a script that binds no device while DDP is told another one."""
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

DEVICE = "cuda:0"  # <- FSD074


def to_gpu(model):
    return model.cuda(0)  # <- FSD074


class Trainer:
    def __init__(self, model):
        self.model = model.to(DEVICE)

    def step(self, x):
        return self.model(x.to(DEVICE)).sum()


def worker(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = to_gpu(torch.nn.Linear(8, 8))
    model.load_state_dict(torch.load("init.pt", map_location="cuda:0"))  # <- FSD074
    ddp = DDP(model, device_ids=[0])  # <- FSD074
    Trainer(ddp).step(torch.randn(2, 8)).backward()
    total = torch.zeros(1).cuda()  # <- FSD074
    dist.all_reduce(total)
    dist.destroy_process_group()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    mp.spawn(worker, args=(n,), nprocs=n)
