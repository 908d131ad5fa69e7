import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class NoValidAnchorsError(RuntimeError):
    pass


class DraftHead(nn.Module):
    def __init__(self, hidden=512, vocab=32000):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, h):
        return self.lm_head(torch.relu(self.proj(h)))


class DraftTrainer:
    def __init__(self, local_rank, block_size=8):
        self.device = torch.device("cuda", local_rank)
        self.block_size = block_size
        self.model = DDP(DraftHead().to(self.device), device_ids=[local_rank])
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=2e-4)

    def select_anchors(self, lengths):
        valid = lengths >= self.block_size
        if not valid.any():
            raise NoValidAnchorsError("every sample shorter than one block")
        return valid

    def compute_loss(self, batch):
        anchors = self.select_anchors(batch["lengths"])
        h = batch["hidden"][anchors]
        logits = self.model(h)
        return nn.functional.cross_entropy(logits, batch["labels"][anchors])

    def train_step(self, batch):
        batch = {k: v.to(self.device) for k, v in batch.items()}
        try:
            loss = self.compute_loss(batch)
        except NoValidAnchorsError:
            return None
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.item()


def fake_batches(n_steps, bsz=4):
    for _ in range(n_steps):
        yield {
            "hidden": torch.randn(bsz, 512),
            "labels": torch.randint(0, 32000, (bsz,)),
            "lengths": torch.randint(1, 16, (bsz,)),
        }


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    trainer = DraftTrainer(local_rank)
    for step, batch in enumerate(fake_batches(1000)):
        loss = trainer.train_step(batch)
        if loss is not None and dist.get_rank() == 0 and step % 50 == 0:
            print(step, loss)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
