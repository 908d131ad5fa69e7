"""FSD080 near-miss, one edit from generate_root_bad.py: the root is the only FSDP unit, so summon_full_params
gathers every parameter and no forward of the generation all-gathers."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from transformers import AutoModelForCausalLM

dist.init_process_group("gloo")
model = FSDP(AutoModelForCausalLM.from_pretrained("gpt2"))
with FSDP.summon_full_params(model, writeback=False, recurse=False):
    out = model.module.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=16)
dist.destroy_process_group()
