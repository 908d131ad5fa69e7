# Pattern from https://github.com/skycrapers/TecoGAN-PyTorch/issues/31 ("unrecognized arguments: --local-rank=0"
# with torch.distributed.launch on torch 2.x). Our code, details replaced.
import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--opt", type=str, required=True)
parser.add_argument("--local_rank", default=-1, type=int, help="local gpu index")  # <- FSD026
args = parser.parse_args()

import torch
import torch.distributed as dist

torch.cuda.set_device(args.local_rank)
dist.init_process_group("nccl")
