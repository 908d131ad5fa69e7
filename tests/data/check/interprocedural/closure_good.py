"""The closures called on every rank, ``generate`` registered."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method


def main(model, batches):
    rank = dist.get_rank()
    fully_shard(model)
    register_fsdp_forward_method(model, "generate")

    def log_samples(prompt):
        return model.generate(prompt)

    def eval_step(batch):
        with torch.no_grad():
            return model(batch).mean()

    for batch in batches:
        model(batch).mean().backward()
    loss = eval_step(batches[0])
    if rank == 0:
        print(loss)
    print(log_samples(batches[0]))
