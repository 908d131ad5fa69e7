"""Every rank asks whether a file exists that only rank 0 then reads and broadcasts: on a node-local disk, or behind
a network filesystem's attribute cache, the answers can differ and only some ranks enter the broadcast. A
checkpoint manager's method, a resume helper, a ``pathlib`` and an ``os.path`` spelling."""

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
        extra = None
        if extra_path.is_file():  # <- FSD056
            box = [None]
            if dist.get_rank() == 0:
                box[0] = torch.load(extra_path, map_location="cpu", weights_only=False)
            dist.broadcast_object_list(box, src=0)
            extra = box[0]
        return extra


def resume_config(run_dir):
    cfg_file = os.path.join(run_dir, "config.json")
    if os.path.exists(cfg_file):  # <- FSD056
        holder = [None]
        if dist.get_rank() == 0:
            with open(cfg_file) as fh:
                holder[0] = json.load(fh)
        dist.broadcast_object_list(holder, src=0)
        return holder[0]
    return {}
