import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy


class TransformerLM(nn.Module):
    def __init__(self, vocab=32000, d=768, n_layers=12, n_heads=12):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, n_heads, 4 * d, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
        return self.lm_head(self.blocks(self.tok(ids), mask=mask, is_causal=True))


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--sharding", default="NO_SHARD", choices=[s.name for s in ShardingStrategy])
    return p.parse_args()


def setup(args):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    # different seed per data-parallel rank so that each rank draws different data
    torch.manual_seed(args.seed + rank)
    return rank, local_rank


def build(args, local_rank):
    model = TransformerLM()
    model = FSDP(model, sharding_strategy=ShardingStrategy[args.sharding], device_id=local_rank)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return model, opt


def main():
    args = parse_args()
    rank, local_rank = setup(args)
    model, opt = build(args, local_rank)
    for step in range(args.steps):
        ids = torch.randint(0, 32000, (8, 513), device="cuda")
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if rank == 0 and step % 100 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
