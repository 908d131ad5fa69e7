"""The no_sync context picked as a factory in a name (`ctx = model.no_sync if ... else nullcontext`), entered later
with `with ctx():`; the step is decided one micro-batch later than the sync."""

from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, accum, distributed=True):
        self.model = DDP(net)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.accum = accum
        self.distributed = distributed

    def run_epoch(self, model, loader):
        for step, (x, y) in enumerate(loader):
            sync_ctx = nullcontext
            if self.distributed:
                sync_ctx = model.no_sync if step % self.accum != 0 else nullcontext
            with sync_ctx():
                loss = torch.nn.functional.mse_loss(model(x), y) / self.accum
                loss.backward()
            if (step + 1) % self.accum == 0:
                self.optimizer.step()  # <- FSD060
                self.optimizer.zero_grad()


def main(loader):
    dist.init_process_group("gloo")
    trainer = Trainer(torch.nn.Linear(4, 1), accum=4)
    trainer.run_epoch(trainer.model, loader)
