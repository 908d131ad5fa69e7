"""FSD080 through a helper: the FSDP1 root (nested units) is built by a loader helper and handed to answer(), which
generates per-rank prompts with the tokenizer's output spread in (**batch cannot carry synced_gpus)."""

import functools

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


def load(name, local_rank):
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    return tok, FSDP(model, auto_wrap_policy=policy, device_id=local_rank)


@torch.no_grad()
def answer(tok, model, prompts):
    batch = tok(prompts, return_tensors="pt", padding=True).to("cuda")
    with FSDP.summon_full_params(model, writeback=False, recurse=False):
        return model.generate(**batch, max_new_tokens=64)  # <- FSD080


def main(name, local_rank, prompts):
    tok, model = load(name, local_rank)
    return answer(tok, model, prompts)
