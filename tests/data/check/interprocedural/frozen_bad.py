"""FSDP1 wrapping a partly frozen model without use_orig_params=True, in the shapes fine-tuning code takes: a PEFT
LoRA model under the transformer-layer policy (each layer's unit holds its frozen base weights and its trainable
adapters), a backbone frozen in a loop over named_parameters(), freezing done in a helper, a Trainer freezing in
__init__ and wrapping in setup(), everything frozen then the head turned back on, a wrapping helper given the PEFT
model its caller built (``wrap(load_lora(name), rank)``) or a model its caller froze. FSDP1 raises "Must flatten tensors
with uniform requires_grad when use_orig_params=False" (PEFT / transformers issues on FSDP with LoRA)."""

import functools

import torch
from peft import LoraConfig, get_peft_model
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


def lora_model(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    return FSDP(model, auto_wrap_policy=policy, device_id=torch.cuda.current_device())  # <- FSD031


def head_only(model):
    for name, param in model.named_parameters():
        if not name.startswith("head"):
            param.requires_grad_(False)
    return FSDP(model)  # <- FSD031


def freeze_backbone(model):
    for p in model.backbone.parameters():
        p.requires_grad = False


def linear_probe(model):
    freeze_backbone(model)
    return FSDP(model)  # <- FSD031


def unfreeze_head(model):
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    return FSDP(model)  # <- FSD031


class Trainer:
    def __init__(self, model):
        self.model = model
        self.model.backbone.requires_grad_(False)

    def setup(self):
        self.model = FSDP(self.model)  # <- FSD031
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4)


def load_lora(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    return get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))


def wrap(model, local_rank):
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
    return FSDP(model, auto_wrap_policy=policy, device_id=local_rank)  # <- FSD031


def shard(net):
    return FSDP(net)  # <- FSD031


def main(name, local_rank):
    model = wrap(load_lora(name), local_rank)
    probe = build_probe()
    probe.backbone.requires_grad_(False)
    return model, shard(probe)


class LoraTrainer:
    def __init__(self, model, local_rank):
        self.model = model
        self.local_rank = local_rank

    def setup(self):
        self.model = FSDP(self.model, device_id=self.local_rank)  # <- FSD031


def fit(name):
    LoraTrainer(load_lora(name), 0).setup()
