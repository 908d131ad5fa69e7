"""A fine-tuning script launched with `accelerate launch` (several processes): the model comes from a helper that
loads it with device_map="auto", then goes through accelerator.prepare; a second one is wrapped in FSDP."""

import torch
from accelerate import Accelerator
from peft import LoraConfig, get_peft_model
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from transformers import AutoModelForCausalLM


def load_model(name):
    model = AutoModelForCausalLM.from_pretrained(name, device_map="auto", torch_dtype=torch.bfloat16)  # <- FSD049
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


class Finetuner:
    def __init__(self, name):
        self.accelerator = Accelerator()
        self.model = get_peft_model(load_model(name), LoraConfig(r=8))
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def setup(self, loader):
        self.model, self.optimizer, loader = self.accelerator.prepare(self.model, self.optimizer, loader)
        return loader


def shard_reference(name):
    ref = AutoModelForCausalLM.from_pretrained(name, device_map="balanced")  # <- FSD049
    return FSDP(ref.eval())
