# FSD011 fix fixture: FSDP1 fp16 with a plain GradScaler; `check --fix` makes it a ShardedGradScaler, and the fixed
# script runs on gloo CPU (world_size 2) under `verify`.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision


def main():
    device = torch.device("cpu")
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        mp = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float32)
        model = FSDP(nn.Linear(8, 4), mixed_precision=mp, device_id=device, use_orig_params=True)
        optim = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(device.type, init_scale=1024.0)  # fp16 gradients need a scaler
        x = torch.randn(4, 8) + int(os.environ["RANK"])
        scaler.scale(model(x).float().pow(2).mean()).backward()
        scaler.step(optim)
        scaler.update()
        assert scaler.get_scale() == 1024.0, scaler.get_scale()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
