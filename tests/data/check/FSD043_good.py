# torch.load where the device is right: map_location given, one process per node loads, a per-rank file, a helper
# the file never calls (its caller decides).
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def load_for_export(path):
    return torch.load(path)


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    model = torch.nn.Linear(8, 8).to(device)
    model.load_state_dict(torch.load("init.pt", map_location="cpu"))
    model.load_state_dict(torch.load("init.pt", device))
    opts = {"map_location": device}
    model.load_state_dict(torch.load("init.pt", **opts))
    shard = torch.load(f"shard_{rank}.pt")  # each rank reads what it wrote from its own GPU
    del shard
    if rank == 0:
        stats = torch.load("stats.pt")  # rank 0 is cuda:0
        del stats
    if local_rank == 0:
        cache = torch.load("node_cache.pt")  # the first process of each node: cuda:0 there
        del cache
    if local_rank in [-1, 0]:
        vocab = torch.load("vocab.pt")  # -1: not distributed; else the first process of the node
        del vocab
    if local_rank not in (-1, 0):
        pass
    else:
        merges = torch.load("merges.pt")
        del merges
    scheduler_state = torch.load("last/scheduler.pt")  # an LR scheduler's state: numbers, no tensors
    del scheduler_state
    ddp = DDP(model, device_ids=[local_rank])
    del ddp
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
