import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import CPUOffload, MixedPrecision
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


class ResidualBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        return x + self.mlp(self.ln(x))


class ImageTower(nn.Module):
    def __init__(self, width=384, depth=8):
        super().__init__()
        self.proj = nn.Linear(768, width)
        self.blocks = nn.ModuleList(ResidualBlock(width) for _ in range(depth))
        self.out = nn.Linear(width, 512)

    def forward(self, x):
        x = self.proj(x)
        for b in self.blocks:
            x = b(x)
        return self.out(x.mean(1))


def create_model(args, local_rank):
    model = ImageTower()
    return FSDP(
        model,
        auto_wrap_policy=ModuleWrapPolicy({ResidualBlock}),
        mixed_precision=MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16),
        cpu_offload=CPUOffload(offload_params=args.offload),
        device_id=local_rank,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--offload", action="store_true")
    p.add_argument("--steps", type=int, default=100)
    args = p.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    model = create_model(args, local_rank)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()

    for step in range(args.steps):
        patches = torch.randn(16, 49, 768, device="cuda")
        target = torch.randn(16, 512, device="cuda")
        loss = nn.functional.mse_loss(model(patches).float(), target)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
