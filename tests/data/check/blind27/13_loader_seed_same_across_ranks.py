import os
import random

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def worker_init_function(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def get_generator(seed):
    g = torch.Generator()
    g.manual_seed(seed)
    return g


class NoisyCropDataset(Dataset):
    def __init__(self, n=50_000, size=32, crop=28):
        self.images = torch.rand(n, 3, size, size)
        self.size, self.crop = size, crop

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        x0, y0 = np.random.randint(0, self.size - self.crop + 1, size=2)
        img = self.images[i, :, y0 : y0 + self.crop, x0 : x0 + self.crop]
        t = np.random.rand()
        noise = torch.from_numpy(np.random.randn(*img.shape).astype("float32"))
        return img, torch.tensor(t, dtype=torch.float32), noise


def make_loader(ds, seed, batch_size=128):
    sampler = DistributedSampler(ds, shuffle=True, seed=seed)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=4,
                      worker_init_fn=worker_init_function, generator=get_generator(seed))


def main(seed=42):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    seed_everything(seed)
    net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 28 * 28 + 1, 512), nn.SiLU(),
                        nn.Linear(512, 3 * 28 * 28)).cuda()
    model = DDP(net, device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    loader = make_loader(NoisyCropDataset(), seed)
    for epoch in range(100):
        loader.sampler.set_epoch(epoch)
        for img, t, noise in loader:
            img, t, noise = img.cuda(), t.cuda(), noise.cuda()
            noisy = (1 - t[:, None, None, None]) * img + t[:, None, None, None] * noise
            inp = torch.cat([noisy.flatten(1), t[:, None]], dim=1)
            loss = (model(inp) - noise.flatten(1)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
