"""A save helper whose own body writes only on rank 0 (it checks the rank itself), called on every rank; the
directory it returns is then read on every rank with no barrier: the others can read before rank 0 has written."""

import json
import os

import torch
import torch.distributed as dist


def save_state(run_dir, model, step):
    if dist.get_rank() == 0:
        os.makedirs(run_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(run_dir, "model.pt"))
        with open(os.path.join(run_dir, "meta.json"), "w") as f:
            json.dump({"step": step}, f)
    return run_dir


def read_meta(run_dir):
    with open(os.path.join(run_dir, "meta.json")) as f:
        return json.load(f)


def train(model, root, steps):
    for step in range(steps):
        d = save_state(os.path.join(root, f"step_{step}"), model, step)
        meta = read_meta(d)  # <- FSD055
        ckpt = os.path.join(root, "last")
        save_state(ckpt, model, step)
        state = torch.load(os.path.join(ckpt, "model.pt"), map_location="cpu")  # <- FSD055
        print(meta, len(state))
