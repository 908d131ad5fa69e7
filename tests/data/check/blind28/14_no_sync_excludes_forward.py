import os
import contextlib
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class ViewSynth(nn.Module):
    def __init__(self, d=768):
        super().__init__()
        self.tokenizer = nn.Linear(3 * 8 * 8, d)
        self.transformer = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 12, batch_first=True), 12)
        self.decoder = nn.Linear(d, 3 * 8 * 8)

    def forward(self, patches):
        return self.decoder(self.transformer(self.tokenizer(patches)))


class Runner:
    def __init__(self, grad_accum_steps=4):
        dist.init_process_group("nccl")
        self.local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(self.local_rank)
        self.model = DDP(ViewSynth().cuda(), device_ids=[self.local_rank])
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=4e-4, betas=(0.9, 0.95))
        self.grad_accum_steps = grad_accum_steps

    def train_step(self, batch, is_update_step):
        patches, target = batch
        pred = self.model(patches)
        loss = nn.functional.mse_loss(pred, target) / self.grad_accum_steps
        ctx = contextlib.nullcontext() if is_update_step else self.model.no_sync()
        with ctx:
            loss.backward()
        if is_update_step:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return loss.item() * self.grad_accum_steps

    def fit(self, total_steps=10000):
        for step in range(total_steps):
            batch = (torch.randn(8, 256, 192, device="cuda"), torch.randn(8, 256, 192, device="cuda"))
            is_update = (step + 1) % self.grad_accum_steps == 0
            loss = self.train_step(batch, is_update)
            if dist.get_rank() == 0 and step % 100 == 0:
                print(step, loss)
        dist.destroy_process_group()


if __name__ == "__main__":
    Runner().fit()
