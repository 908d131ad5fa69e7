import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Detector(nn.Module):
    def __init__(self, num_classes=91):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU())
        self.cls_head = nn.Conv2d(64, num_classes, 1)
        self.box_head = nn.Conv2d(64, 4, 1)

    def forward(self, x):
        f = self.backbone(x)
        return self.cls_head(f), self.box_head(f)


def setup_model(args, local_rank):
    model = Detector().to(local_rank)
    model = DDP(model, device_ids=[local_rank])
    if args.pretrain_weights:
        ckpt = torch.load(args.pretrain_weights, map_location=f"cuda:{local_rank}")
        # weights exported by the single-GPU fine-tuning script (plain nn.Module)
        model.load_state_dict(ckpt["model"])
    return model


@torch.no_grad()
def evaluate(model, local_rank):
    model.eval()
    cls, box = model.module(torch.randn(2, 3, 128, 128, device=local_rank))
    model.train()
    return cls.shape, box.shape


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pretrain-weights", default="rfdetr_base.pth")
    args = p.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = setup_model(args, local_rank)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(50):
        cls, box = model(torch.randn(4, 3, 128, 128, device=local_rank))
        loss = cls.logsumexp(1).mean() + box.abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if dist.get_rank() == 0:
        print(evaluate(model, local_rank))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
