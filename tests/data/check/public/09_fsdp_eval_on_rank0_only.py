# Pattern from https://github.com/facebookresearch/fairscale/issues/703 (validation on rank 0 only; "you need all
# ranks to participate in the validation because rank 0 needs to fetch parameters from them"). Our code, details replaced.
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def fit(module, train_data, val_data):
    model = FSDP(module)
    for x in train_data:
        model(x).sum().backward()
    if dist.get_rank() == 0:
        with torch.no_grad():
            val = sum(model(x).sum() for x in val_data)  # <- FSD010
        print(val)
