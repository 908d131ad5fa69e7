"""The accelerate script, right: each process loads the model onto its own device (device_map={"": index}), or
without a device map and lets prepare() place it."""

import torch
from accelerate import Accelerator
from peft import LoraConfig, get_peft_model
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from transformers import AutoModelForCausalLM


def load_model(name, index):
    model = AutoModelForCausalLM.from_pretrained(name, device_map={"": index}, torch_dtype=torch.bfloat16)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


class Finetuner:
    def __init__(self, name):
        self.accelerator = Accelerator()
        self.model = get_peft_model(load_model(name, self.accelerator.local_process_index), LoraConfig(r=8))
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def setup(self, loader):
        self.model, self.optimizer, loader = self.accelerator.prepare(self.model, self.optimizer, loader)
        return loader


def shard_reference(name):
    ref = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
    return FSDP(ref.eval())


def offline_generate(name, prompt_ids):
    big = AutoModelForCausalLM.from_pretrained(name, device_map="auto")  # one process, nothing wraps it
    return big.generate(prompt_ids)
