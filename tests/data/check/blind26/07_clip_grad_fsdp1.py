import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


class PolicyNet(nn.Module):
    def __init__(self, dim=512, layers=6):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, 8, 4 * dim, batch_first=True) for _ in range(layers)
        )
        self.value = nn.Linear(dim, 1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.value(x).squeeze(-1)


class PreferenceTrainer:
    def __init__(self, config, local_rank):
        self.config = config
        self.local_rank = local_rank
        self.fsdp = True
        policy = PolicyNet()
        self.policy = FSDP(
            policy,
            auto_wrap_policy=ModuleWrapPolicy({nn.TransformerEncoderLayer}),
            sharding_strategy=ShardingStrategy.FULL_SHARD,
            device_id=local_rank,
        )
        self.optimizer = torch.optim.RMSprop(self.policy.parameters(), lr=config["lr"])

    def clip_gradient(self):
        return torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.config["max_grad_norm"]).item()

    def train_step(self, chosen, rejected):
        margin = self.policy(chosen).mean(-1) - self.policy(rejected).mean(-1)
        loss = -nn.functional.logsigmoid(margin).mean()
        loss.backward()
        grad_norm = self.clip_gradient()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss.item(), grad_norm


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    trainer = PreferenceTrainer({"lr": 5e-6, "max_grad_norm": 10.0}, local_rank)
    for step in range(100):
        chosen = torch.randn(4, 32, 512, device="cuda")
        rejected = torch.randn(4, 32, 512, device="cuda")
        loss, gn = trainer.train_step(chosen, rejected)
        if dist.get_rank() == 0:
            print(f"step {step} loss {loss:.4f} grad_norm {gn:.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
