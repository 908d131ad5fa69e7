import functools
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy


class Net(nn.Module):
    def __init__(self, d=2048, depth=8):
        super().__init__()
        self.layers = nn.Sequential(*[nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(depth)])
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        return self.head(self.layers(x))


class GradMonitor:
    def __init__(self, every=100):
        self.every = every

    def __call__(self, model, step):
        if step % self.every != 0 or dist.get_rank() != 0:
            return
        with FSDP.summon_full_params(model, rank0_only=True, with_grads=True, writeback=False):
            norms = {n: p.grad.norm().item() for n, p in model.named_parameters() if p.grad is not None}
        worst = max(norms, key=norms.get)
        print(f"step {step}: largest grad norm {worst} = {norms[worst]:.3e}")


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=1_000_000)
    model = FSDP(Net(), auto_wrap_policy=policy, device_id=local_rank, use_orig_params=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    monitor = GradMonitor()
    for step in range(1, 1001):
        x = torch.randn(64, 2048, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        monitor(model, step)
        opt.step()
        opt.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
