# Pattern from https://github.com/pytorch/pytorch/issues/54059: validation on one GPU while a barrier is meant
# to hold the other ranks; the barrier sits in the code only rank 0 runs. Our code, details replaced.
import torch
import torch.distributed as dist


def validate(model, data):
    with torch.no_grad():
        acc = sum(model(x).argmax(1).eq(y).float().mean() for x, y in data) / len(data)
    dist.barrier()
    return acc


def run(rank, model, data):
    for epoch in range(3):
        if rank == 0:
            print(epoch, validate(model, data))  # <- FSD003
