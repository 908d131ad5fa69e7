import os
import functools
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy


class DecoderBlock(nn.Module):
    def __init__(self, d=1024):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 16, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x):
        h = self.n1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.n2(x))


class FSDPGradientClipper:
    def __init__(self, wrapped_model, max_norm, norm_type=2.0):
        self.wrapped_model = wrapped_model
        self.max_norm = max_norm
        self.norm_type = norm_type

    def clip_gradients(self):
        return self.wrapped_model.clip_grad_norm_(max_norm=self.max_norm, norm_type=self.norm_type)


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = nn.Sequential(nn.Embedding(32000, 1024), *[DecoderBlock() for _ in range(12)], nn.Linear(1024, 32000))
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={DecoderBlock})
    model = FSDP(model, auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 device_id=local_rank, use_orig_params=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    clipper = FSDPGradientClipper(model, max_norm=1.0)

    for step in range(1000):
        ids = torch.randint(0, 32000, (4, 512), device="cuda")
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        grad_norm = clipper.clip_gradients()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if dist.get_rank() == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.3f} grad_norm {grad_norm.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
