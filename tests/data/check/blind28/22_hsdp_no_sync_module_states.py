import os
import functools
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, MixedPrecision
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


class MPTBlock(nn.Module):
    def __init__(self, d=2048, heads=16):
        super().__init__()
        self.norm_1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm_2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.norm_1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ffn(self.norm_2(x))


def build_model(cfg):
    blocks = [MPTBlock(cfg["d_model"], cfg["n_heads"]) for _ in range(cfg["n_layers"])]
    return nn.Sequential(nn.Embedding(cfg["vocab_size"], cfg["d_model"]), *blocks, nn.Linear(cfg["d_model"], cfg["vocab_size"]))


def get_fsdp_config(cfg):
    return dict(
        sharding_strategy=ShardingStrategy.HYBRID_SHARD,
        mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16),
        auto_wrap_policy=functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={MPTBlock}),
        limit_all_gathers=True,
        use_orig_params=True,
        sync_module_states=cfg.get("load_path") is not None,
    )


def main():
    cfg = {"d_model": 2048, "n_heads": 16, "n_layers": 24, "vocab_size": 50368, "load_path": None, "seed": 17}
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    torch.manual_seed(cfg["seed"] + dist.get_rank())
    model = build_model(cfg)
    model = FSDP(model, device_id=local_rank, **get_fsdp_config(cfg))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4, betas=(0.9, 0.95))

    for step in range(20000):
        ids = torch.randint(0, cfg["vocab_size"], (8, 2048), device="cuda")
        logits = model(ids[:, :-1])
        loss = nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
        loss.backward()
        model.clip_grad_norm_(1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 100 == 0 and dist.get_rank() == 0:
            print(step, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
