import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy


class TransformerBlock(nn.Module):
    def __init__(self, d=2048, heads=16):
        super().__init__()
        self.attn_norm = nn.RMSNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True, bias=False)
        self.ff_norm = nn.RMSNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d, bias=False), nn.SiLU(), nn.Linear(4 * d, d, bias=False))

    def forward(self, x):
        h = self.attn_norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.ff_norm(x))


class Transformer(nn.Module):
    def __init__(self, vocab=50304, d=2048, n_layers=16, init_seed=2025):
        super().__init__()
        self.init_seed = init_seed
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([TransformerBlock(d) for _ in range(n_layers)])
        self.norm = nn.RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def init_weights(self, device):
        seed = self.init_seed + dist.get_rank()
        gen = torch.Generator(device=device).manual_seed(seed)
        for name, p in self.named_parameters():
            local = p.to_local() if hasattr(p, "to_local") else p
            with torch.no_grad():
                if local.dim() >= 2:
                    local.normal_(0.0, 0.02, generator=gen)
                else:
                    local.fill_(1.0)

    def forward(self, ids):
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x)
        return self.lm_head(self.norm(x))


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    world = dist.get_world_size()
    mesh = init_device_mesh("cuda", (world // 8, 8), mesh_dim_names=("replicate", "shard"))
    with torch.device("meta"):
        model = Transformer()
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    model.to_empty(device="cuda")
    model.init_weights(torch.device("cuda"))
    opt = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=0.1)

    for step in range(10000):
        ids = torch.randint(0, 50304, (4, 2048), device="cuda")
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
