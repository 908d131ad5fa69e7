"""A Hugging Face Trainer script with a conditional head: it asks for gradient checkpointing and for DDP's unused
parameter search, and a custom loop in the same file enables checkpointing on a model it wraps with DDP."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def train_with_trainer(model, dataset):
    args = TrainingArguments(  # <- FSD050
        output_dir="out",
        per_device_train_batch_size=4,
        gradient_checkpointing=True,
        ddp_find_unused_parameters=True,
        bf16=True,
    )
    Trainer(model=model, args=args, train_dataset=dataset).train()


class Loop:
    def __init__(self, name, local_rank):
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16).to(local_rank)
        model.gradient_checkpointing_enable()  # <- FSD050
        self.model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
