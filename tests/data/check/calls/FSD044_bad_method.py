"""A trainer class that wraps the policy with FSDP1 in one method and samples from it in another (RLHF-style
loops; the generate call bypasses the root's forward)."""

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class PPOTrainer:
    def __init__(self, policy, policy_wrap):
        self.policy = FSDP(policy, auto_wrap_policy=policy_wrap, device_id=torch.cuda.current_device())

    @torch.no_grad()
    def rollout(self, prompts):
        return self.policy.generate(prompts, max_new_tokens=64, do_sample=True)  # <- FSD044

    @torch.no_grad()
    def rollout_ok(self, prompts):
        with FSDP.summon_full_params(self.policy, writeback=False, recurse=False):
            return self.policy.generate(prompts, max_new_tokens=64)
