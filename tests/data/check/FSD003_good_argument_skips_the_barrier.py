"""The helper's barriers sit under conditions that its arguments make false (yolov5's train.py, val.py,
utils/dataloaders.py, utils/torch_utils.py):

- ``torch_distributed_zero_first(local_rank)``: the non-first ranks wait at the first barrier, the first one at the
  second; every rank reaches one, and with ``local_rank=-1`` (not distributed) none;
- ``create_dataloader(..., rank=-1)`` on rank 0 only (the validation loader), and ``val.run(...)`` whose
  ``create_dataloader(...)`` leaves ``rank`` at its default of -1: neither reaches a barrier on any rank."""

import os
from contextlib import contextmanager

import torch
import torch.distributed as dist

LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))
RANK = int(os.getenv("RANK", -1))


@contextmanager
def torch_distributed_zero_first(local_rank: int):
    if local_rank not in [-1, 0]:
        dist.barrier(device_ids=[local_rank])
    yield
    if local_rank == 0:
        dist.barrier(device_ids=[0])


def create_dataloader(path, imgsz, batch_size, stride, hyp=None, rank=-1, workers=8, shuffle=False):
    with torch_distributed_zero_first(rank):  # the dataset cache is built once
        dataset = list(range(batch_size))
    sampler = None if rank == -1 else torch.utils.data.distributed.DistributedSampler(dataset, shuffle=shuffle)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler), dataset


def run(data, weights=None, batch_size=32, imgsz=640, model=None, dataloader=None, task="val", workers=8):
    training = model is not None
    if not training:
        dataloader = create_dataloader(data[task], imgsz, batch_size, 32, workers=workers)[0]
    for batch in dataloader:
        print(batch)
    return 0.0


def train(hyp, opt, model):
    train_loader, dataset = create_dataloader(opt.train, 640, 16, 32, hyp=hyp, rank=LOCAL_RANK, shuffle=True)
    if RANK in {-1, 0}:
        val_loader = create_dataloader(opt.val, 640, 32, 32, hyp=hyp, rank=-1, workers=4)[0]
    for epoch in range(opt.epochs):
        for batch in train_loader:
            print(batch)
        if RANK in {-1, 0}:
            run(opt.data, batch_size=32, model=model, dataloader=val_loader)
    if RANK in {-1, 0}:
        run(opt.data, weights="best.pt")
