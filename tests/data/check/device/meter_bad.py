"""Statistics meters reduced on an NCCL group whose backend comes from an argparse option (default "nccl"): the
legacy typed constructors (torch.FloatTensor / torch.LongTensor) always build on the CPU."""

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
        buf = torch.FloatTensor([self.total, self.count])
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)  # <- FSD047
        self.total, self.count = buf.tolist()


def sum_across_ranks(t):
    dist.all_reduce(t)
    return t


def count_samples(loader):
    seen = 0
    for batch in loader:
        seen += len(batch)
    return sum_across_ranks(torch.LongTensor([seen])).item()  # <- FSD047


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
