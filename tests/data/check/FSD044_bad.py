"""FSDP1-wrapped causal LM sampled during training (transformers / pytorch issues: "setStorage: ... out of bounds
for storage of size 0" or "'weight' must be 2-D" from model.generate under FSDP)."""

import functools

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


def main(prompt_ids):
    dist.init_process_group("nccl")
    base = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    model = FSDP(base, auto_wrap_policy=policy, device_id=torch.cuda.current_device())
    out = model.generate(prompt_ids, max_new_tokens=20)  # <- FSD044
    more = model.module.generate(prompt_ids, max_new_tokens=20)  # <- FSD044
    dist.destroy_process_group()
    return out, more
