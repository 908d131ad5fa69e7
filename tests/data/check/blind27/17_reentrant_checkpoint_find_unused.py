import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.utils.checkpoint as checkpoint
from torch.nn.parallel import DistributedDataParallel as DDP


class FocalBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        y = self.dw(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return x + self.mlp(self.norm(y))


class Stage(nn.Module):
    def __init__(self, dim, depth, use_checkpoint=False):
        super().__init__()
        self.blocks = nn.ModuleList(FocalBlock(dim) for _ in range(depth))
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for blk in self.blocks:
            if self.use_checkpoint:
                x = checkpoint.checkpoint(blk, x)
            else:
                x = blk(x)
        return x


class Detector(nn.Module):
    def __init__(self, dim=96, use_checkpoint=True):
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, stride=4)
        self.stage = Stage(dim, depth=6, use_checkpoint=use_checkpoint)
        self.cls_head = nn.Linear(dim, 80)
        self.aux_head = nn.Linear(dim, 4)

    def forward(self, img, with_aux=False):
        x = self.stem(img).permute(0, 2, 3, 1)
        feat = self.stage(x).mean(dim=(1, 2))
        out = {"cls": self.cls_head(feat)}
        if with_aux:
            out["box"] = self.aux_head(feat)
        return out


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = Detector().cuda()
    model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05)
    for it in range(10_000):
        img = torch.randn(4, 3, 512, 512, device="cuda")
        labels = torch.randint(0, 80, (4,), device="cuda")
        out = model(img, with_aux=(it % 2 == 0))
        loss = nn.functional.cross_entropy(out["cls"], labels)
        if "box" in out:
            loss = loss + out["box"].abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
