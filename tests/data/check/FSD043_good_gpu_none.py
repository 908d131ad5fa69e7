# pytorch/examples imagenet/main.py (https://github.com/pytorch/examples/blob/main/imagenet/main.py): with --gpu
# each process maps the checkpoint to its GPU; without it one process per node drives all its GPUs from cuda:0, where
# the saved device is right. The author chose per branch: an earlier version of FSD043 flagged the first load.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main_worker(gpu, args):
    dist.init_process_group("nccl", init_method=args.dist_url, world_size=args.world_size, rank=args.rank)
    model = torch.nn.Linear(8, 8)
    if gpu is not None:
        torch.cuda.set_device(gpu)
        model = DDP(model.cuda(gpu), device_ids=[gpu])
    else:
        model = DDP(model.cuda())
    if args.resume and os.path.isfile(args.resume):
        if gpu is None:
            checkpoint = torch.load(args.resume)
        else:
            checkpoint = torch.load(args.resume, map_location=f"cuda:{gpu}")
        model.load_state_dict(checkpoint["state_dict"])
    dist.destroy_process_group()


if __name__ == "__main__":
    import argparse

    import torch.multiprocessing as mp

    args = argparse.Namespace(dist_url="env://", world_size=2, rank=0, resume="")
    mp.spawn(main_worker, nprocs=2, args=(args,))
