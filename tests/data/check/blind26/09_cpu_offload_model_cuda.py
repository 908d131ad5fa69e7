import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import CPUOffload
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy


class ConformerLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        a, _ = self.attn(x, x, x, need_weights=False)
        return self.norm(x + a)


class SpeechEncoder(nn.Module):
    def __init__(self, d=256, n=8, vocab=512):
        super().__init__()
        self.subsample = nn.Linear(80, d)
        self.layers = nn.ModuleList(ConformerLayer(d) for _ in range(n))
        self.ctc = nn.Linear(d, vocab)

    def forward(self, feats):
        x = self.subsample(feats)
        for layer in self.layers:
            x = layer(x)
        return self.ctc(x).log_softmax(-1)


def build(local_rank):
    device = torch.device("cuda", local_rank)
    model = SpeechEncoder().to(device)
    return FSDP(
        model,
        auto_wrap_policy=ModuleWrapPolicy({ConformerLayer}),
        cpu_offload=CPUOffload(offload_params=True),
    )


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = build(local_rank)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ctc = nn.CTCLoss(blank=0, zero_infinity=True)
    for step in range(50):
        feats = torch.randn(4, 200, 80, device="cuda")
        targets = torch.randint(1, 512, (4, 30), device="cuda")
        logp = model(feats).transpose(0, 1)
        loss = ctc(logp, targets, torch.full((4,), 200), torch.full((4,), 30))
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
