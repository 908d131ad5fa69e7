import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler


class Ctx:
    def __init__(self):
        dist.init_process_group("nccl")
        self.rank = dist.get_rank()
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.world = dist.get_world_size()
        torch.cuda.set_device(self.local_rank)
        self.device = torch.device("cuda", self.local_rank)

    @property
    def is_main(self):
        return self.rank == 0


def make_data(n=2048, dim=64):
    x = torch.randn(n, dim)
    y = torch.randint(0, 10, (n,))
    return TensorDataset(x, y)


def evaluate(model, loader, device):
    model.eval()
    total, correct = 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        pred = model(x).detach().argmax(-1)
        correct += (pred == y).sum().item()
        total += y.numel()
    model.train()
    return correct / max(total, 1)


def cleanup():
    dist.barrier()
    dist.destroy_process_group()


def main():
    ctx = Ctx()
    net = nn.Sequential(nn.Linear(64, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 10))
    model = DDP(net.to(ctx.device), device_ids=[ctx.local_rank])
    train_ds, val_ds = make_data(), make_data(512)
    sampler = DistributedSampler(train_ds)
    loader = DataLoader(train_ds, batch_size=32, sampler=sampler)
    val_loader = DataLoader(val_ds, batch_size=64)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(ctx.device), y.to(ctx.device)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        acc = evaluate(model, val_loader, ctx.device)
        if ctx.is_main:
            print(f"epoch {epoch} val acc {acc:.3f}")

    if ctx.is_main:
        final_acc = evaluate(model, val_loader, ctx.device)
        print(f"final acc {final_acc:.3f}")
        torch.save(model.module.state_dict(), "sft_final.pt")
    cleanup()


if __name__ == "__main__":
    main()
