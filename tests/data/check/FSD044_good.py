"""generate() inside summon_full_params (recurse=False: the root's own parameters gathered, the wrapped layers
still gather theirs in their forward), also through a context chosen at run time; a plain forward."""

from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main(base, prompt_ids, use_fsdp):
    dist.init_process_group("nccl")
    model = FSDP(base, device_id=torch.cuda.current_device())
    with FSDP.summon_full_params(model, writeback=False, recurse=False):
        out = model.generate(prompt_ids, max_new_tokens=20)
    context = FSDP.summon_full_params(model, writeback=False, recurse=False) if use_fsdp else nullcontext()
    with context:
        more = model.generate(prompt_ids, max_new_tokens=20)
    logits = model(prompt_ids)
    dist.destroy_process_group()
    return out, more, logits
