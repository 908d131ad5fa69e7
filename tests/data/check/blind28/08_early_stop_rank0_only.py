import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.getenv("RANK", -1))
LOCAL_RANK = int(os.getenv("LOCAL_RANK", -1))


class EarlyStopping:
    def __init__(self, patience=10):
        self.best_fitness = 0.0
        self.best_epoch = 0
        self.patience = patience

    def __call__(self, epoch, fitness):
        if fitness >= self.best_fitness:
            self.best_epoch = epoch
            self.best_fitness = fitness
        return (epoch - self.best_epoch) >= self.patience


def validate(model, device):
    model.eval()
    with torch.no_grad():
        x = torch.randn(256, 3, 64, 64, device=device)
        score = model(x).softmax(-1).max(-1).values.mean().item()
    model.train()
    return score


def train(epochs=300):
    dist.init_process_group("nccl")
    torch.cuda.set_device(LOCAL_RANK)
    device = torch.device("cuda", LOCAL_RANK)
    net = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 80))
    model = DDP(net.to(device), device_ids=[LOCAL_RANK])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937)
    stopper = EarlyStopping(patience=30)

    for epoch in range(epochs):
        for _ in range(100):
            imgs = torch.randn(16, 3, 64, 64, device=device)
            targets = torch.randint(0, 80, (16,), device=device)
            loss = nn.functional.cross_entropy(model(imgs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        if RANK in (-1, 0):
            fitness = validate(model.module, device)
            stop = stopper(epoch=epoch, fitness=fitness)
            torch.save({"epoch": epoch, "model": model.module.state_dict()}, "last.pt")
            if stop:
                break

    dist.destroy_process_group()


if __name__ == "__main__":
    train()
