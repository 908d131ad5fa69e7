"""FSD080: a causal LM sharded with fully_shard, generate registered as an FSDP forward method, and generate
called without synced_gpus: the rank whose prompts reach their end-of-sequence token first stops joining the
per-layer all-gathers of the next tokens' forwards."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method
from transformers import AutoModelForCausalLM, AutoTokenizer

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
tok = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
for block in model.transformer.h:
    fully_shard(block)
fully_shard(model)
register_fsdp_forward_method(model, "generate")
prompts = ["Hello", "The capital of France is"][rank % 2]
batch = tok(prompts, return_tensors="pt").to("cuda")
with torch.no_grad():
    out = model.generate(batch["input_ids"], max_new_tokens=32)  # <- FSD080
print(tok.decode(out[0]))
