import os
import torch
import torch.nn as nn
import torch.distributed as dist
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def validate(val_loader, model, criterion, gpu):
    top1, losses = AverageMeter(), AverageMeter()
    model.eval()
    with torch.no_grad():
        for images, target in val_loader:
            images, target = images.cuda(gpu, non_blocking=True), target.cuda(gpu, non_blocking=True)
            output = model(images)
            loss = criterion(output, target)
            acc1 = (output.argmax(1) == target).float().mean().item() * 100
            losses.update(loss.item(), images.size(0))
            top1.update(acc1, images.size(0))
    return top1.avg


def main_worker(gpu, epochs=90):
    dist.init_process_group("nccl")
    torch.cuda.set_device(gpu)
    model = torchvision.models.resnet50().cuda(gpu)
    model = nn.parallel.DistributedDataParallel(model, device_ids=[gpu])
    criterion = nn.CrossEntropyLoss().cuda(gpu)
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
    train_ds = torchvision.datasets.ImageFolder("/data/imagenet/train", tf)
    val_ds = torchvision.datasets.ImageFolder("/data/imagenet/val", tf)
    train_sampler = DistributedSampler(train_ds)
    val_sampler = DistributedSampler(val_ds, shuffle=False)
    train_loader = DataLoader(train_ds, 64, sampler=train_sampler, num_workers=8, pin_memory=True)
    val_loader = DataLoader(val_ds, 64, sampler=val_sampler, num_workers=8, pin_memory=True)

    best_acc1 = 0.0
    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        for images, target in train_loader:
            images, target = images.cuda(gpu), target.cuda(gpu)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        acc1 = validate(val_loader, model, criterion, gpu)
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        if dist.get_rank() == 0 and is_best:
            torch.save(model.module.state_dict(), "model_best.pth")


if __name__ == "__main__":
    main_worker(int(os.environ["LOCAL_RANK"]))
