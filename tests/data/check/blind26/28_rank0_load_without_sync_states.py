import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.models.mistral.modeling_mistral import MistralDecoderLayer


def load_model_memory_efficient(name, rank):
    """Only rank 0 reads the pretrained weights into CPU RAM; others build an empty shell."""
    if rank == 0:
        return AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    config = AutoConfig.from_pretrained(name)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=torch.bfloat16)
    return model


def shard(model, rank, local_rank):
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={MistralDecoderLayer})
    return FSDP(
        model,
        auto_wrap_policy=policy,
        mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32),
        device_id=local_rank,
        use_orig_params=True,
        param_init_fn=(lambda m: m.to_empty(device=torch.device("cuda"), recurse=False)) if rank != 0 else None,
    )


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = shard(load_model_memory_efficient("mistralai/Mistral-7B-v0.1", rank), rank, local_rank)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for step in range(50):
        ids = torch.randint(0, 32000, (1, 512), device="cuda")
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        model.clip_grad_norm_(1.0)
        opt.step()
        opt.zero_grad()
        if rank == 0:
            print(step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
