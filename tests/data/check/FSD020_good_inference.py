# A reward model cast to bf16 and sharded for inference only: no optimizer is built from it, so there are no
# master weights or optimizer state to keep in fp32.
import torch
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def build_reward_model():
    reward = nn.Linear(8, 1)
    reward.to(torch.bfloat16)
    reward = FSDP(reward)
    return reward.eval()


def build_actor():
    actor = FSDP(nn.Linear(8, 8))
    optim = torch.optim.AdamW(actor.parameters(), lr=1e-5)
    return actor, optim
