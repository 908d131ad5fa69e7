"""A script split into helpers: the model from setup(), the loader from build_loader(), the loop in train()."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


def setup(net):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return DDP(net.cuda(), device_ids=[local_rank])


def build_loader(path, batch_size):
    data = torch.load(path, map_location="cpu")
    dataset = TensorDataset(data["x"], data["y"])
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=2, drop_last=True)  # <- FSD061


def train(model, loader, epochs):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(epochs):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()


def main(net, path):
    model = setup(net)
    loader = build_loader(path, 32)
    train(model, loader, 3)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(torch.nn.Linear(16, 1), "data.pt")
