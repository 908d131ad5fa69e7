import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Policy(nn.Module):
    def __init__(self, obs_dim=32, act_dim=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh())
        self.pi = nn.Linear(128, act_dim)
        self.v = nn.Linear(128, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


class EvalManager:
    def __init__(self, interval, episodes=64):
        self.interval = interval
        self.episodes = episodes

    @torch.no_grad()
    def maybe_run(self, policy, epoch, device):
        if epoch % self.interval != 0:
            return None
        returns = []
        for ep in range(self.episodes):
            obs = torch.randn(200, 32, device=device)
            logits, _ = policy(obs)
            returns.append(logits.softmax(-1).max(-1).values.sum().item())
        path = f"eval_epoch{epoch}.mp4"
        with open(path, "w") as f:
            f.write(str(sum(returns) / len(returns)))
        return sum(returns) / len(returns)


class PuffeRL:
    def __init__(self):
        dist.init_process_group("nccl")
        self.local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(self.local_rank)
        self.device = torch.device("cuda", self.local_rank)
        self.raw = Policy().to(self.device)
        self.policy = DDP(self.raw, device_ids=[self.local_rank])
        self.opt = torch.optim.Adam(self.policy.parameters(), lr=3e-4)
        self._eval_manager = EvalManager(interval=5)

    def train_epoch(self):
        obs = torch.randn(1024, 32, device=self.device)
        adv = torch.randn(1024, device=self.device)
        logits, value = self.policy(obs)
        logp = logits.log_softmax(-1)[:, 0]
        loss = -(logp * adv).mean() + 0.5 * (value - adv).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def train(self, epochs=50):
        for epoch in range(epochs):
            loss = self.train_epoch()
            if self._eval_manager is not None:
                score = self._eval_manager.maybe_run(self.raw, epoch, self.device)
                if score is not None:
                    print(f"[rank {dist.get_rank()}] epoch {epoch} loss {loss:.3f} eval {score:.3f}")
        dist.destroy_process_group()


if __name__ == "__main__":
    PuffeRL().train()
