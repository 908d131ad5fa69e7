import os

import torch
import torch.distributed as dist
import torch.nn as nn
from ema_pytorch import EMA
from torch.nn.parallel import DistributedDataParallel as DDP


class UNetLite(nn.Module):
    def __init__(self, ch=64):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.SiLU(),
                                  nn.Conv2d(ch, ch, 4, stride=2, padding=1))
        self.up = nn.Sequential(nn.SiLU(), nn.ConvTranspose2d(ch, ch, 4, stride=2, padding=1),
                                nn.Conv2d(ch, 3, 3, padding=1))

    def forward(self, x):
        return self.up(self.down(x))


class DiffusionTrainer:
    def __init__(self, local_rank):
        self.rank = dist.get_rank()
        self.device = torch.device("cuda", local_rank)
        net = UNetLite().to(self.device)
        self.model = DDP(net, device_ids=[local_rank])
        self.opt = torch.optim.Adam(self.model.parameters(), lr=2e-4)
        if self.rank == 0:
            self.ema = EMA(net, beta=0.9999, update_every=10,
                           update_model_with_ema_every=1000)

    def step(self, x0):
        noise = torch.randn_like(x0)
        loss = nn.functional.mse_loss(self.model(x0 + noise), noise)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        if self.rank == 0:
            self.ema.update()
        return loss.item()

    def sample_and_save(self, step):
        if self.rank == 0:
            with torch.no_grad():
                imgs = self.ema(torch.randn(16, 3, 32, 32, device=self.device))
            torch.save({"ema": self.ema.state_dict(), "step": step, "samples": imgs.cpu()},
                       f"ckpt_{step}.pt")


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    trainer = DiffusionTrainer(local_rank)
    for step in range(1, 200_001):
        x0 = torch.rand(64, 3, 32, 32, device=trainer.device) * 2 - 1
        trainer.step(x0)
        if step % 10_000 == 0:
            trainer.sample_and_save(step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
