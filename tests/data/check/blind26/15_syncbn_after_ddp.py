import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class SegHead(nn.Module):
    def __init__(self, classes=21):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        )
        self.cls = nn.Conv2d(64, classes, 1)

    def forward(self, x):
        return self.cls(self.body(x))


def prepare_model(local_rank, sync_bn=True):
    model = SegHead().cuda(local_rank)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    if sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    return model


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    model = prepare_model(local_rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    ds = TensorDataset(torch.randn(256, 3, 64, 64), torch.randint(0, 21, (256, 64, 64)))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=2, sampler=sampler, drop_last=True)

    for epoch in range(10):
        sampler.set_epoch(epoch)
        for img, mask in loader:
            img, mask = img.cuda(local_rank), mask.cuda(local_rank)
            loss = nn.functional.cross_entropy(model(img), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
