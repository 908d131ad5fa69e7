"""The same code, right: every rank holds the value it decides on (all_reduce, or a broadcast after the reduce),
the decisions that only rank 0 makes only print or save on rank 0, and a decision on the reduced tensor's shape
(the same on every rank) is fine."""

import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullStateDictConfig, StateDictType
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def evaluate(model, loader, device):
    sums = torch.zeros(2, device=device)
    with torch.no_grad():
        for x, y in loader:
            sums[0] += torch.nn.functional.mse_loss(model(x.to(device)), y.to(device), reduction="sum")
            sums[1] += len(y)
    dist.all_reduce(sums, op=dist.ReduceOp.SUM)
    return (sums[0] / sums[1]).item()


def rank0_report(loader, device):
    counts = torch.tensor([float(len(loader)), 1.0], device=device)
    dist.reduce(counts, dst=0)
    ratio = counts[0] / counts[1]
    if dist.get_rank() == 0:
        print(f"batches per rank: {ratio:.2f}")
    return ratio


def save_full(model, path):
    cfg = FullStateDictConfig(offload_to_cpu=True, rank0_only=True)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
    if dist.get_rank() == 0:
        torch.save(state, path)


class Trainer:
    def __init__(self, model, loader, device):
        self.model, self.loader, self.device = model, loader, device
        self.best = float("inf")

    def validation_loss(self):
        stats = torch.zeros(2, device=self.device)
        for x, y in self.loader:
            stats += torch.tensor([self.model(x.to(self.device)).sum().item(), len(y)], device=self.device)
        dist.reduce(stats, 0)
        dist.broadcast(stats, 0)
        mean = stats[0] / stats[1]
        return mean

    def maybe_checkpoint(self, epoch):
        current = self.validation_loss()
        if current < self.best:
            self.best = current
            dist.barrier()


def fit(model, loader, optimizer, device, epochs):
    best = float("inf")
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
            optimizer.step()
        val = evaluate(model, loader, device)
        if val < best:
            best = val
            save_full(model, f"best-{epoch}.pt")
        ratio = rank0_report(loader, device)
        if dist.get_rank() == 0 and ratio > 2:
            print("uneven shards")
        correct = torch.tensor([float(epoch), 10.0], device=device)
        dist.reduce(correct, dst=0)
        width = correct.shape[0]
        if width > 1:
            dist.barrier()
        acc = correct[0] / correct[1]
        if dist.get_rank() == 0 and acc > 0.95:
            torch.save({"acc": acc}, "acc.pt")


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    device = torch.device("cuda", local_rank)
    model = FSDP(torch.nn.Linear(8, 1).to(device), device_id=local_rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = [(torch.randn(4, 8), torch.randn(4, 1))]
    fit(model, loader, optimizer, device, 3)
    Trainer(model, loader, device).maybe_checkpoint(0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
