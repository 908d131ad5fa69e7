"""FSD080 near-misses, one edit from generate_bad.py: synced_gpus=True for the FSDP1 model with nested units inside
summon_full_params, and for the ZeRO-3 engine's module (generate_root_good.py: a root with no nested unit)."""
import deepspeed
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

DS_CONFIG = {"train_batch_size": 8, "zero_optimization": {"stage": 3}}


class Trainer:
    def __init__(self, name):
        model = AutoModelForCausalLM.from_pretrained(name)
        self.model = FSDP(model, auto_wrap_policy=ModuleWrapPolicy({LlamaDecoderLayer}), use_orig_params=True)

    def sample(self, input_ids):
        with FSDP.summon_full_params(self.model, writeback=False, recurse=False):
            return self.model.generate(input_ids, max_new_tokens=64, synced_gpus=True)


def evaluate(engine, prompts):
    with torch.no_grad():
        return [engine.module.generate(p, max_new_tokens=64, synced_gpus=True) for p in prompts]


def main():
    dist.init_process_group("gloo")
    try:
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
        engine, _, _, _ = deepspeed.initialize(model=model, config=DS_CONFIG, model_parameters=model.parameters())
        evaluate(engine, [torch.tensor([[1, 2, 3]])])
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
