"""A modded-nanogpt-style optimizer step: each rank updates its own parameter of a group of world_size and all-gathers
the group; a rank that takes the `continue` made the same all_gather just before it, so every rank makes one per
iteration."""

import torch
import torch.distributed as dist


class DistOpt(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        world_size = dist.get_world_size()
        rank = dist.get_rank()
        for group in self.param_groups:
            params = group["params"]
            params_pad = params + [torch.empty_like(params[-1])] * (world_size - len(params) % world_size)
            for base_i in range(0, len(params), world_size):
                if base_i + rank < len(params):
                    p = params[base_i + rank]
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        dist.all_gather(params_pad[base_i : base_i + world_size], params_pad[base_i + rank])
                        continue
                    state["step"] += 1
                    p.add_(p.grad, alpha=-group["lr"])
                dist.all_gather(params_pad[base_i : base_i + world_size], params_pad[base_i + rank])
