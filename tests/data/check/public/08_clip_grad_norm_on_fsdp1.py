# Pattern from https://github.com/ContextualAI/HALOs/issues/15: torch.nn.utils.clip_grad_norm_ on an FSDP1 policy
# clips by the local shard's norm; FSDP1 needs the module's clip_grad_norm_. Our code, details replaced.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Trainer:
    def __init__(self, policy, max_grad_norm):
        self.policy = FSDP(policy, use_orig_params=True)
        self.max_grad_norm = max_grad_norm

    def clip_gradient(self):
        return torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm).item()  # <- FSD012
