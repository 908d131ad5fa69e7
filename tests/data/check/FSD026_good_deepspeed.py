# The DeepSpeed launcher passes --local_rank (underscore) to every process: declaring it is right here.
import argparse

import deepspeed

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1, help="set by the deepspeed launcher")
args = parser.parse_args()
deepspeed.init_distributed()
