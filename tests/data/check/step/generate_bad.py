"""FSD080 shapes: an FSDP1 model with nested units generating inside summon_full_params (the units reshard after
each forward and all-gather again at the next token) in a Trainer, and a DeepSpeed ZeRO-3 engine's module
generating in an evaluation helper."""
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
            return self.model.generate(input_ids, max_new_tokens=64)  # <- FSD080


def evaluate(engine, prompts):
    with torch.no_grad():
        return [engine.module.generate(p, max_new_tokens=64) for p in prompts]  # <- FSD080


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
