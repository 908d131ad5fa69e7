"""The argument shapes done right: evaluation on every rank, ``generate`` registered as a forward method."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method


def evaluate(model, batch):
    with torch.no_grad():
        return model(batch).mean()


def sample(model, prompt):
    return model.generate(prompt, max_new_tokens=20)


def train(model, batches, rank):
    fully_shard(model)
    register_fsdp_forward_method(model, "generate")
    opt = torch.optim.AdamW(model.parameters())
    for step, batch in enumerate(batches):
        model(batch).mean().backward()
        opt.step()
        if step % 100 == 0:
            loss = evaluate(model, batch)
            if rank == 0:
                print(loss)
    print(sample(model, batches[0]))
    dist.destroy_process_group()
