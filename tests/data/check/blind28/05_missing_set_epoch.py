import os
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import torchvision
from torchvision import transforms
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class TwoViews:
    def __init__(self, t):
        self.t = t

    def __call__(self, x):
        return self.t(x), self.t(x)


def nt_xent(z_i, z_j, temperature=0.5):
    z = F.normalize(torch.cat([z_i, z_j]), dim=1)
    sim = z @ z.t() / temperature
    n = z_i.size(0)
    sim.fill_diagonal_(-1e9)
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, targets)


class SimCLR(nn.Module):
    def __init__(self, proj_dim=64):
        super().__init__()
        self.encoder = torchvision.models.resnet18(num_classes=512)
        self.projector = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, proj_dim))

    def forward(self, x_i, x_j):
        return self.projector(self.encoder(x_i)), self.projector(self.encoder(x_j))


def train(args_epochs=100, batch_size=128):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    aug = transforms.Compose([
        transforms.RandomResizedCrop(32),
        transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(0.4, 0.4, 0.4, 0.1),
        transforms.ToTensor(),
    ])
    dataset = torchvision.datasets.CIFAR10("./data", train=True, download=False, transform=TwoViews(aug))
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=8, drop_last=True, pin_memory=True)

    model = nn.SyncBatchNorm.convert_sync_batchnorm(SimCLR()).cuda()
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)

    for epoch in range(args_epochs):
        loss_epoch = 0.0
        for step, ((x_i, x_j), _) in enumerate(loader):
            x_i, x_j = x_i.cuda(non_blocking=True), x_j.cuda(non_blocking=True)
            z_i, z_j = model(x_i, x_j)
            loss = nt_xent(z_i, z_j)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_epoch += loss.item()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} loss {loss_epoch / len(loader):.4f}")
            torch.save(model.module.state_dict(), f"simclr_{epoch}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
