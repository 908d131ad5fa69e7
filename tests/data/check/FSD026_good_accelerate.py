# An Accelerate script, run by `accelerate launch`: the flag is declared for old launchers and never read.
import argparse

from accelerate import Accelerator

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
args = parser.parse_args()
accelerator = Accelerator()
