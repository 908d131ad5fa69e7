"""The save helper waits for rank 0 itself (a barrier after its rank-0 write), or the caller does before reading:
every reader reads a complete file."""

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
    dist.barrier()
    return run_dir


def save_only(run_dir, model):
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), os.path.join(run_dir, "model.pt"))


def read_meta(run_dir):
    with open(os.path.join(run_dir, "meta.json")) as f:
        return json.load(f)


def train(model, root, steps):
    for step in range(steps):
        d = save_state(os.path.join(root, f"step_{step}"), model, step)
        meta = read_meta(d)
        ckpt = os.path.join(root, "last")
        save_only(ckpt, model)
        dist.barrier()
        state = torch.load(os.path.join(ckpt, "model.pt"), map_location="cpu")
        print(meta, len(state))
