"""Nested functions that close over a fully_shard-ed ``model``: ``.generate()`` in one (FSD021), a rank-0 call of
the other, which runs the forward (FSD010)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def main(model, batches):
    rank = dist.get_rank()
    fully_shard(model)

    def log_samples(prompt):
        return model.generate(prompt)  # <- FSD021

    def eval_step(batch):
        with torch.no_grad():
            return model(batch).mean()

    for batch in batches:
        model(batch).mean().backward()
    if rank == 0:
        print(eval_step(batches[0]))  # <- FSD010
    print(log_samples(batches[0]))
