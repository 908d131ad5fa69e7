"""FSD074, the same shapes fixed: the spawned rank is the GPU index, and set_device binds it, so a bare .cuda() and
"cuda" are this rank's GPU; a device that only a one-process run takes, a default the caller replaces, and code
under a rank condition are not the mistake."""
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def to_gpu(model, device):
    return model.cuda(device)


class Trainer:
    def __init__(self, model, device="cuda:0"):
        self.device = device
        self.model = model.to(device)

    def step(self, x):
        return self.model(x.to(self.device)).sum()


def worker(rank, world_size, distributed):
    if distributed:
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    device = f"cuda:{rank}" if distributed else "cuda:0"
    model = to_gpu(torch.nn.Linear(8, 8), device)
    model.load_state_dict(torch.load("init.pt", map_location=device))
    ddp = DDP(model, device_ids=[rank])
    Trainer(ddp, device).step(torch.randn(2, 8)).backward()
    total = torch.zeros(1).cuda()
    dist.all_reduce(total)
    if rank == 0:
        print(total.to("cuda:0"))
    dist.destroy_process_group()


if __name__ == "__main__":
    n = torch.cuda.device_count()
    mp.spawn(worker, args=(n, n > 1), nprocs=n)
