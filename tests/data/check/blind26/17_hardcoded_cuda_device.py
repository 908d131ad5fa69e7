import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--device", default="cuda:0")
    return p.parse_args()


class Detector(nn.Module):
    def __init__(self, num_queries=100, dim=256):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, dim, 16, 16), nn.Flatten(2))
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(dim, 8, batch_first=True), 2)
        self.queries = nn.Embedding(num_queries, dim)
        self.head = nn.Linear(dim, 4)

    def forward(self, images):
        mem = self.backbone(images).transpose(1, 2)
        q = self.queries.weight.unsqueeze(0).expand(images.size(0), -1, -1)
        return self.head(self.decoder(q, mem)).sigmoid()


def main():
    args = parse()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device(args.device)
    torch.cuda.set_device(device)

    model = Detector().to(device)
    model = DDP(model, device_ids=[device.index])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ds = TensorDataset(torch.randn(512, 3, 224, 224), torch.rand(512, 100, 4))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=args.bs, sampler=sampler)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for img, boxes in loader:
            img, boxes = img.to(device), boxes.to(device)
            loss = nn.functional.l1_loss(model(img), boxes)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if local_rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
