import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.utils.data import DataLoader, IterableDataset


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return x + self.ff(self.norm(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=8192, d=512, n_layers=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Block(d) for _ in range(n_layers))
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens):
        h = self.emb(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.out(h)


class PackedDocs(IterableDataset):
    """Documents are split across ranks by file; files have different sizes."""

    def __init__(self, rank, world_size, seq_len=256):
        self.rank, self.world_size, self.seq_len = rank, world_size, seq_len

    def __iter__(self):
        g = torch.Generator().manual_seed(1234 + self.rank)
        n_tokens = int(torch.randint(40_000, 60_000, (1,), generator=g))
        stream = torch.randint(0, 8192, (n_tokens,), generator=g)
        for i in range(0, n_tokens - self.seq_len - 1, self.seq_len):
            chunk = stream[i : i + self.seq_len + 1]
            yield chunk[:-1], chunk[1:]


class Validator:
    def __init__(self, model, rank, world_size, device):
        self.model, self.device = model, device
        self.loader = DataLoader(PackedDocs(rank, world_size), batch_size=8)

    @torch.no_grad()
    def validate(self, step):
        self.model.eval()
        total, count = torch.zeros((), device=self.device), 0
        for inputs, labels in self.loader:
            logits = self.model(inputs.to(self.device))
            total += nn.functional.cross_entropy(logits.flatten(0, 1), labels.to(self.device).flatten())
            count += 1
        loss = total / count
        dist.all_reduce(loss, op=dist.ReduceOp.AVG)
        self.model.train()
        return loss.item()


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    model = TinyLM().to(device)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    validator = Validator(model, rank, world, device)

    for step in range(1, 2001):
        tokens = torch.randint(0, 8192, (8, 257), device=device)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 500 == 0:
            val = validator.validate(step)
            if rank == 0:
                print(f"step {step} val_loss {val:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
