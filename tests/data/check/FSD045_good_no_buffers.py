"""Rank 0 samples text through the DDP wrapper of a GPT built only of embeddings, linear layers, layer norms and
dropout (a pattern of public training code): the module has no buffer, so DDP's forward has nothing to broadcast
and runs no collective; the other ranks are not waited for. An earlier version reported every rank-0 forward
through a DDP wrapper."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, dim, dropout=0.0):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(dropout)
        self.dim = dim

    def forward(self, x):
        return x + self.drop(self.ff(self.norm(x)))


class GPT(nn.Module):
    def __init__(self, vocab, dim, layers):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.Sequential(*[Block(dim) for _ in range(layers)])
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        return self.head(self.blocks(self.emb(idx)))


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = GPT(1000, 64, 2).to(local_rank)
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(10):
        idx = torch.randint(0, 1000, (4, 16), device=local_rank)
        loss = model(idx).logsumexp(-1).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if dist.get_rank() == 0:
            with torch.no_grad():
                print(model(idx[:1]).argmax(-1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
