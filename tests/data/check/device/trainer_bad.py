"""A Trainer class of an NCCL job: the epoch statistics are built on the CPU in a method and reduced there, or
handed to a helper of the file that reduces its argument."""

import os

import torch
import torch.distributed as dist


def all_reduce_mean(t):
    dist.all_reduce(t)
    return t / dist.get_world_size()


class Trainer:
    def __init__(self, model, loader):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.model, self.loader = model, loader

    def validate(self):
        correct, seen = 0, 0
        with torch.no_grad():
            for x, y in self.loader:
                pred = self.model(x.cuda()).argmax(-1)
                correct += (pred == y.cuda()).sum().item()
                seen += len(y)
        acc = torch.tensor([correct, seen], dtype=torch.float64)
        dist.all_reduce(acc, op=dist.ReduceOp.SUM)  # <- FSD047
        return (acc[0] / acc[1]).item()

    def epoch_loss(self, losses):
        mean = all_reduce_mean(torch.tensor(float(sum(losses)) / len(losses)))  # <- FSD047
        return mean.item()


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
