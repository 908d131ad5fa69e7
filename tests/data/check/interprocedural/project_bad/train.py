"""The training script of the two-file project: imports the helpers by module name."""

import torch
import torch.distributed as dist

from pkg import helpers
from pkg.helpers import apply_fsdp, evaluate


def main(model, batches):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    optimizer = torch.optim.AdamW(model.parameters())  # <- FSD001
    model = apply_fsdp(model)
    for batch in batches:
        model(batch).mean().backward()
        optimizer.step()
    if rank == 0:
        print(evaluate(model, batches[0]))  # <- FSD010
    print(helpers.sample(model, batches[0]))
    dist.destroy_process_group()
