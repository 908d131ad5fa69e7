import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


def load(name, local_rank):
    tok = AutoTokenizer.from_pretrained(name)
    tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    model = FSDP(model, auto_wrap_policy=policy, device_id=local_rank, use_orig_params=True)
    return tok, model


def rank_prompts(prompts, rank, world):
    return prompts[rank::world]


@torch.no_grad()
def answer(tok, model, prompts):
    batch = tok(prompts, return_tensors="pt", padding=True).to("cuda")
    with FSDP.summon_full_params(model, writeback=False, recurse=False):
        out = model.generate(**batch, max_new_tokens=128, do_sample=False)
    return tok.batch_decode(out[:, batch["input_ids"].shape[1]:], skip_special_tokens=True)


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    tok, model = load(os.environ.get("MODEL", "meta-llama/Llama-2-13b-chat-hf"), local_rank)
    model.eval()
    prompts = [f"Question {i}: what is {i} squared?" for i in range(37)]
    mine = rank_prompts(prompts, rank, world)
    answers = answer(tok, model, mine)
    gathered = [None] * world
    dist.all_gather_object(gathered, answers)
    if rank == 0:
        for a in sum(gathered, []):
            print(a)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
