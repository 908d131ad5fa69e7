"""The same partly frozen models wrapped right: use_orig_params=True (FSDP1 then keeps each original parameter's
requires_grad), or PEFT's own policy that wraps the adapters in units of their own; a fully frozen teacher is
uniform and needs neither; a wrapping helper whose callers pass it a model with nothing frozen, or a PEFT model
under PEFT's own policy."""

import functools

import torch
from peft import LoraConfig, get_peft_model
from peft.utils.other import fsdp_auto_wrap_policy
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


def lora_model(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    return FSDP(model, auto_wrap_policy=policy, device_id=torch.cuda.current_device(), use_orig_params=True)


def head_only(model):
    for name, param in model.named_parameters():
        if not name.startswith("head"):
            param.requires_grad_(False)
    return FSDP(model, use_orig_params=True)


def lora_own_units(model):
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    return FSDP(model, auto_wrap_policy=fsdp_auto_wrap_policy(model))


def teacher(model):
    model.requires_grad_(False)
    return FSDP(model)


def freeze_backbone(model):
    for p in model.backbone.parameters():
        p.requires_grad = False


def linear_probe(model):
    freeze_backbone(model)
    return FSDP(model, use_orig_params=True)


def unfreeze_head(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return FSDP(model, use_orig_params=True)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.model.backbone.requires_grad_(False)

    def setup(self):
        self.model = FSDP(self.model, use_orig_params=True)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)


def load_lora(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    return get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))


def wrap_own_units(model, local_rank):
    return FSDP(model, auto_wrap_policy=fsdp_auto_wrap_policy(model), device_id=local_rank)


def shard(net):
    return FSDP(net)


def main(name, local_rank):
    model = wrap_own_units(load_lora(name), local_rank)
    full = shard(AutoModelForCausalLM.from_pretrained(name))
    return model, full, shard(teacher_copy(full))


def teacher_copy(model):
    model.requires_grad_(False)
    return model


class PlainTrainer:
    def __init__(self, model, local_rank):
        self.model = model
        self.local_rank = local_rank

    def setup(self):
        self.model = FSDP(self.model, device_id=self.local_rank)


def fit(name):
    PlainTrainer(AutoModelForCausalLM.from_pretrained(name), 0).setup()
