# Pattern from https://github.com/huggingface/accelerate/pull/3762: FSDP2 modules have no no_sync(); gradient
# accumulation must call set_requires_gradient_sync(False). Our code, details replaced.
import contextlib

import torch.nn as nn
from torch.distributed.fsdp import fully_shard


def train(batches, accum=4):
    model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 1))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    for i, x in enumerate(batches):
        ctx = model.no_sync() if (i + 1) % accum else contextlib.nullcontext()  # <- FSD018
        with ctx:
            model(x).sum().backward()
