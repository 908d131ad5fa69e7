# parse_known_args() ignores an unknown --local-rank=N; on torch 2 the project's config module reads the rank
# from the environment.
import argparse

import torch
from config import rank_from_environment

parser = argparse.ArgumentParser()
if int(torch.__version__.split(".")[0]) == 1:
    parser.add_argument("--local_rank", type=int, required=True)
args, unparsed = parser.parse_known_args()
local_rank = args.local_rank if hasattr(args, "local_rank") else rank_from_environment()
