import contextlib
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class PolicyHead(nn.Module):
    def __init__(self, obs_dim=512, act_dim=7):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_dim, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU())
        self.action = nn.Linear(1024, act_dim)

    def forward(self, obs):
        return self.action(self.trunk(obs))


class VLATrainer:
    def __init__(self, model, optimizer, grad_accum):
        self.model = model
        self.optimizer = optimizer
        self.grad_accum = grad_accum

    def _backward_loss(self, loss, is_last_micro):
        ctx = contextlib.nullcontext() if is_last_micro else self.model.no_sync()
        with ctx:
            (loss / self.grad_accum).backward()

    def step(self, micro_batches):
        for i, (obs, act) in enumerate(micro_batches):
            pred = self.model(obs)
            loss = nn.functional.mse_loss(pred, act)
            self._backward_loss(loss, is_last_micro=(i == len(micro_batches) - 1))
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.item()


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(PolicyHead().cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    trainer = VLATrainer(model, opt, grad_accum=8)
    for it in range(200):
        micro = [(torch.randn(16, 512, device="cuda"), torch.randn(16, 7, device="cuda")) for _ in range(8)]
        loss = trainer.step(micro)
        if dist.get_rank() == 0 and it % 20 == 0:
            print(it, loss)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
