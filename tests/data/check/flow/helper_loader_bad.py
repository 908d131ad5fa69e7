"""A nanoGPT-style script whose loader comes from a helper: the sampler is built inline in the DataLoader call."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def get_loader(dataset, batch_size, num_workers=4):
    return DataLoader(
        dataset, batch_size=batch_size, sampler=DistributedSampler(dataset), num_workers=num_workers, pin_memory=True
    )


def main(net, dataset, max_epochs):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(net.cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    train_loader = get_loader(dataset, 16)  # <- FSD059
    epoch = 0
    while epoch < max_epochs:
        for x, y in train_loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        epoch += 1
    dist.destroy_process_group()
