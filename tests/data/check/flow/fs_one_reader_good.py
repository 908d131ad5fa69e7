"""The same loads with rank 0's answer shared before the branch, or the file read by every rank that tested it."""

import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


class CheckpointManager:
    def __init__(self, root):
        self.root = Path(root)

    def load_extra(self, step):
        extra_path = self.root / f"step_{step}" / "extra.pt"
        present = [extra_path.is_file() if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(present, src=0)
        extra = None
        if present[0]:
            box = [None]
            if dist.get_rank() == 0:
                box[0] = torch.load(extra_path, map_location="cpu", weights_only=False)
            dist.broadcast_object_list(box, src=0)
            extra = box[0]
        return extra


def resume_config(run_dir, model):
    cfg_file = os.path.join(run_dir, "config.json")
    if os.path.exists(cfg_file):
        with open(cfg_file) as fh:
            cfg = json.load(fh)  # every rank reads the shared file it tested
        dist.barrier()
        return cfg
    return {}


def load_vocab(path):
    if os.path.exists(path):
        if dist.get_rank() == 0:
            with open(path) as fh:
                print(fh.read()[:80])  # rank 0 reads it, but nothing synchronised depends on the test
    return path
