# A module that only defines the arguments of a project (its entry point, launched by the DeepSpeed launcher
# elsewhere, parses them): what launches it is not known here.
import argparse


def add_distributed_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--local_rank", type=int, default=None, help="local rank passed from the launcher")
    return parser
