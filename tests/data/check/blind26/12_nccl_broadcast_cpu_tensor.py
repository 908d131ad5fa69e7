import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn


class TinyDecoder(nn.Module):
    def __init__(self, vocab=256, dim=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.out(h)


def encode(text):
    return [min(ord(c), 255) for c in text]


def share_prompt(tokens, device):
    rank = dist.get_rank()
    if rank == 0:
        length_tensor = torch.tensor([len(tokens)], dtype=torch.int)
    else:
        length_tensor = torch.tensor([0], dtype=torch.int)
    dist.broadcast(length_tensor, src=0)
    n = int(length_tensor.item())
    if rank == 0:
        ids = torch.tensor(tokens, dtype=torch.long, device=device)
    else:
        ids = torch.empty(n, dtype=torch.long, device=device)
    dist.broadcast(ids, src=0)
    return ids


@torch.no_grad()
def generate(model, ids, steps):
    ids = ids.unsqueeze(0)
    for _ in range(steps):
        nxt = model(ids)[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return ids[0].tolist()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--prompt", default="hello")
    p.add_argument("--steps", type=int, default=16)
    args = p.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    torch.manual_seed(0)
    model = TinyDecoder().to(device).eval()
    tokens = encode(args.prompt) if dist.get_rank() == 0 else []
    ids = share_prompt(tokens, device)
    out = generate(model, ids, args.steps)
    if dist.get_rank() == 0:
        print(out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
