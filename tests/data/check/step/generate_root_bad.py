"""FSD080: an FSDP1 model whose decoder blocks are nested units generates inside summon_full_params(recurse=False)
(the root's own parameters gathered): each block all-gathers in its forward at every new token."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from transformers import AutoModelForCausalLM
from transformers.models.gpt2.modeling_gpt2 import GPT2Block

dist.init_process_group("gloo")
model = FSDP(AutoModelForCausalLM.from_pretrained("gpt2"), auto_wrap_policy=ModuleWrapPolicy({GPT2Block}))
with FSDP.summon_full_params(model, writeback=False, recurse=False):
    out = model.module.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=16)  # <- FSD080
dist.destroy_process_group()
