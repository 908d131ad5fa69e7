import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class EpochCounterWithStopper:
    def __init__(self, limit, limit_to_stop, direction="min"):
        self.limit, self.limit_to_stop = limit, limit_to_stop
        self.sign = 1 if direction == "min" else -1
        self.best, self.bad_epochs, self.current = float("inf"), 0, 0

    def __iter__(self):
        while self.current < self.limit:
            self.current += 1
            yield self.current

    def should_stop(self, metric):
        if self.sign * metric < self.best:
            self.best, self.bad_epochs = self.sign * metric, 0
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.limit_to_stop


class ASRBrain:
    def __init__(self, local_rank):
        self.device = torch.device("cuda", local_rank)
        net = nn.LSTM(80, 256, num_layers=2, batch_first=True).to(self.device)
        self.modules = DDP(net, device_ids=[local_rank])
        self.opt = torch.optim.Adam(self.modules.parameters(), lr=1e-3)

    def fit_epoch(self, n_batches=200):
        for _ in range(n_batches):
            feats = torch.randn(8, 100, 80, device=self.device)
            out, _ = self.modules(feats)
            loss = out.pow(2).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()

    @torch.no_grad()
    def evaluate(self, n_batches=50):
        total = 0.0
        for _ in range(n_batches):
            feats = torch.randn(8, 100, 80, device=self.device)
            out, _ = self.modules.module(feats)
            total += out.pow(2).mean().item()
        return total / n_batches


def on_stage_end_valid(brain, counter):
    valid_loss = brain.evaluate()
    print(f"epoch {counter.current}: valid loss {valid_loss:.4f}")
    return counter.should_stop(valid_loss)


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    brain = ASRBrain(local_rank)
    counter = EpochCounterWithStopper(limit=100, limit_to_stop=5)
    for epoch in counter:
        brain.fit_epoch()
        if dist.get_rank() == 0:
            if on_stage_end_valid(brain, counter):
                break
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
