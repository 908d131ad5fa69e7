"""A fully_shard-ed module passed as an argument: rank-0 evaluation through a helper (FSD010), ``.generate()``
inside ``sample(model)`` without register_fsdp_forward_method (FSD021)."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def evaluate(model, batch):
    with torch.no_grad():
        return model(batch).mean()


def sample(model, prompt):
    return model.generate(prompt, max_new_tokens=20)  # <- FSD021


def train(model, batches, rank):
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters())
    for step, batch in enumerate(batches):
        model(batch).mean().backward()
        opt.step()
        if rank == 0 and step % 100 == 0:
            print(evaluate(model, batch))  # <- FSD010
    print(sample(model, batches[0]))
    dist.destroy_process_group()
