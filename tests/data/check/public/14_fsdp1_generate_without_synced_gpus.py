# Pattern from https://github.com/pytorch/pytorch/issues/100069 (FSDP + Hugging Face generate): inside
# summon_full_params(recurse=False) the wrapped decoder layers still all-gather in every forward, and the ranks
# deadlocked once their samples stopped at different lengths until generate was given synced_gpus=True. The
# DPO trainer that cites the issue samples the same way. Our code, details replaced.
import contextlib
import functools

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


class Sampler:
    def __init__(self, name, device, use_fsdp=True):
        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
        model = AutoModelForCausalLM.from_pretrained(name)
        self.use_fsdp = use_fsdp
        self.policy = FSDP(
            model, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD, device_id=device, use_orig_params=True
        )

    @torch.no_grad()
    def sample(self, batch, max_length):
        ctx = lambda: FSDP.summon_full_params(self.policy, writeback=False, recurse=False) if self.use_fsdp else contextlib.nullcontext()  # noqa: E731
        with ctx():
            return self.policy.generate(  # <- FSD080
                batch["input_ids"], attention_mask=batch["attention_mask"], max_length=max_length, do_sample=True
            )
