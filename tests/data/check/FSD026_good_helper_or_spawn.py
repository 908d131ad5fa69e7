# The rank comes from an init_distributed_mode(args)-style helper (which reads LOCAL_RANK under torchrun), or the
# script starts its own workers with torch.multiprocessing, so no launcher passes the flag.
import argparse

import torch.multiprocessing as mp

from myproject import misc


def worker(rank, args):
    misc.init_distributed_mode(args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    mp.spawn(worker, args=(args,), nprocs=2)
