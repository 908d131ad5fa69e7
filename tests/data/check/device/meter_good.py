"""The same meters, right: the buffers are moved to the rank's GPU (or built with the CUDA constructor) before the
collective, and the backend option defaults to "nccl"."""

import argparse
import os

import torch
import torch.distributed as dist


class Meter:
    def __init__(self):
        self.total, self.count = 0.0, 0

    def add(self, value, n=1):
        self.total += value * n
        self.count += n

    def synchronize(self):
        buf = torch.FloatTensor([self.total, self.count]).cuda()
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)
        self.total, self.count = buf.tolist()


def sum_across_ranks(t):
    dist.all_reduce(t)
    return t


def count_samples(loader):
    seen = 0
    for batch in loader:
        seen += len(batch)
    return sum_across_ranks(torch.cuda.LongTensor([seen])).item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", "--backend", type=str, default="nccl", choices=["nccl", "gloo"])
    args = parser.parse_args()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend=args.dist_backend)
    meter = Meter()
    meter.add(0.5, 4)
    meter.synchronize()
    print(meter.total / meter.count, count_samples([[1, 2], [3]]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
