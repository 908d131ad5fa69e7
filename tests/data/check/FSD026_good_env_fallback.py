# --local_rank is accepted for old launchers, but the rank actually used comes from LOCAL_RANK, which torchrun sets.
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
local_rank = int(os.environ.get("LOCAL_RANK", args.local_rank))
