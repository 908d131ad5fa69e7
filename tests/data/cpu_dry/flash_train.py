"""A GPU script that imports a CUDA-only extension (flash-attn): a CPU dry run cannot stand in for its kernels."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
try:
    from flash_attn import flash_attn_func  # the script's own fallback must not hide the refusal
except Exception:
    flash_attn_func = None
q = torch.randn(1, 4, 2, 8, device="cuda")
dist.all_reduce(q)
dist.destroy_process_group()
