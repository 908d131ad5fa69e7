import os

import fire
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup_environ():
    dist.init_process_group("nccl")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    return rank, local_rank, world_size


def build_model():
    layers = [nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True) for _ in range(6)]
    return nn.Sequential(*layers, nn.Linear(512, 2))


def main(epochs: int = 3, batch_size: int = 8, lr: float = 1e-4):
    rank, local_rank, world_size = setup_environ()
    torch.cuda.set_device(rank)

    model = FSDP(build_model(), auto_wrap_policy=ModuleWrapPolicy({nn.TransformerEncoderLayer}),
                 device_id=torch.cuda.current_device())
    opt = torch.optim.AdamW(model.parameters(), lr=lr)

    ds = TensorDataset(torch.randn(512, 64, 512), torch.randint(0, 2, (512,)))
    sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(ds, batch_size=batch_size, sampler=sampler)

    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            logits = model(x).mean(1)
            loss = nn.functional.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    fire.Fire(main)
