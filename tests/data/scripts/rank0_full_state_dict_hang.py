# A classic mistake: gathering the full state dict on rank 0 only. The gather is a collective, so rank 0
# waits for rank 1, which has already left (and waits in the final barrier).
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard

dist.init_process_group("gloo")
model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
for layer in model:
    fully_shard(layer)
fully_shard(model)
if int(os.environ["RANK"]) == 0:
    state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    torch.save(state, "model.pt")
dist.barrier()
dist.destroy_process_group()
