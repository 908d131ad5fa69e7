import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import gather_object


class RewardTrainer:
    def __init__(self, policy, tokenizer_decode, log_with="wandb"):
        self.accelerator = Accelerator(log_with=log_with)
        self.policy = policy
        self.decode = tokenizer_decode
        self.optimizer = torch.optim.AdamW(policy.parameters(), lr=1.4e-5)
        self.policy, self.optimizer = self.accelerator.prepare(self.policy, self.optimizer)
        self.accelerator.init_trackers("ppo")

    def step(self, queries, responses, rewards):
        logits = self.policy(torch.cat([queries, responses], dim=1))
        logp = logits.log_softmax(-1).mean(dim=(1, 2))
        loss = -(logp * rewards).mean()
        self.accelerator.backward(loss)
        self.optimizer.step()
        self.optimizer.zero_grad()
        return {"ppo/loss": loss.detach()}

    def log_stats(self, stats, batch, rewards):
        table_rows = [
            [q, r, float(s)]
            for q, r, s in zip(batch["query"], batch["response"], rewards.tolist())
        ]
        all_rows = gather_object(table_rows)
        if self.accelerator.is_main_process:
            self.accelerator.log({"game_log": all_rows, **{k: v.item() for k, v in stats.items()}})


class ToyPolicy(nn.Module):
    def __init__(self, vocab=1000, d=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lm = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.lm(self.emb(ids))


def main():
    trainer = RewardTrainer(ToyPolicy(), tokenizer_decode=lambda ids: " ".join(map(str, ids.tolist())))
    device = trainer.accelerator.device
    for _ in range(100):
        queries = torch.randint(0, 1000, (8, 16), device=device)
        responses = torch.randint(0, 1000, (8, 24), device=device)
        rewards = torch.randn(8, device=device)
        stats = trainer.step(queries, responses, rewards)
        batch = {"query": [trainer.decode(q) for q in queries],
                 "response": [trainer.decode(r) for r in responses]}
        trainer.log_stats(stats, batch, rewards)
    trainer.accelerator.end_training()


if __name__ == "__main__":
    main()
