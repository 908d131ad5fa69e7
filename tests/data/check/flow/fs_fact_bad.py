"""Filesystem facts the ranks answer differently: a per-rank cache name in a Trainer, a file rank 0 wrote just before."""

import os
from pathlib import Path

import torch
import torch.distributed as dist


class Trainer:
    def __init__(self, rank, model):
        self.rank = rank
        self.model = model

    def load_features(self, feats):
        cache = f"features_{self.rank}.pt"
        if not Path(cache).exists():  # <- FSD056
            dist.all_reduce(feats)
            torch.save(feats, cache)
        return torch.load(cache, map_location="cpu")


def exchange(stats, path):
    if dist.get_rank() == 0:
        torch.save(stats, path)
    if os.path.isfile(path):  # <- FSD056
        dist.broadcast(stats, src=0)
