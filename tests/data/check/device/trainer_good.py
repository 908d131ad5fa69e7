"""The same Trainer, right: the statistics live on the rank's GPU before the collective (built there, or moved)."""

import os

import torch
import torch.distributed as dist


def all_reduce_mean(t):
    dist.all_reduce(t)
    return t / dist.get_world_size()


class Trainer:
    def __init__(self, model, loader):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.device = torch.device("cuda", self.local_rank)
        self.model, self.loader = model, loader

    def validate(self):
        correct, seen = 0, 0
        with torch.no_grad():
            for x, y in self.loader:
                pred = self.model(x.to(self.device)).argmax(-1)
                correct += (pred == y.to(self.device)).sum().item()
                seen += len(y)
        acc = torch.tensor([correct, seen], dtype=torch.float64, device=self.device)
        dist.all_reduce(acc, op=dist.ReduceOp.SUM)
        return (acc[0] / acc[1]).item()

    def epoch_loss(self, losses):
        mean = all_reduce_mean(torch.tensor(float(sum(losses)) / len(losses)).to(self.device))
        return mean.item()

    def gathered(self, t):
        out = torch.empty(dist.get_world_size() * t.numel(), device=self.device)
        dist.all_gather_into_tensor(out, t)  # t: the caller's, of unknown device
        return out


def main():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend="nccl")
    try:
        trainer = Trainer(torch.nn.Linear(4, 2).cuda(), [(torch.randn(8, 4), torch.randint(0, 2, (8,)))])
        print(trainer.validate(), trainer.epoch_loss([0.5, 0.25]))
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
