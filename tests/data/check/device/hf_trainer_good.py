"""The Trainer script, right: checkpointing made non-reentrant where DDP searches for unused parameters."""

import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def train_with_trainer(model, dataset):
    args = TrainingArguments(
        output_dir="out",
        per_device_train_batch_size=4,
        gradient_checkpointing=True,
        gradient_checkpointing_kwargs={"use_reentrant": False},
        ddp_find_unused_parameters=True,
        bf16=True,
    )
    Trainer(model=model, args=args, train_dataset=dataset).train()


class Loop:
    def __init__(self, name, local_rank):
        model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16).to(local_rank)
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)


def checkpointed_without_unused_search(model, local_rank):
    model.gradient_checkpointing_enable()  # a reentrant checkpoint is fine when DDP does not search
    return DDP(model, device_ids=[local_rank], static_graph=True)
