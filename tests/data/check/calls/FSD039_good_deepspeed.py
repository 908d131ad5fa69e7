"""The DeepSpeed fine-tune done right: every rank calls engine.save_checkpoint (DeepSpeed writes the model states
from one rank and each rank's optimizer partition itself); only the log line is on rank 0. A file of its own that
rank 0 alone writes (torch.save of a metric) is no framework save."""

import argparse

import deepspeed
import torch
import torch.distributed as dist


def save(engine, path, tag):
    engine.save_checkpoint(path, tag=tag)


class Trainer:
    def __init__(self, model, args):
        self.rank = dist.get_rank()
        self.engine, self.optimizer, _, _ = deepspeed.initialize(
            args=args, model=model, model_parameters=model.parameters()
        )

    def step(self, batch):
        loss = self.engine(batch).sum()
        self.engine.backward(loss)
        self.engine.step()

    def checkpoint(self, out, epoch):
        self.engine.save_checkpoint(out, tag=f"epoch{epoch}")
        if self.rank == 0:
            print(f"saved epoch {epoch} to {out}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    deepspeed.init_distributed()
    model = torch.nn.Linear(16, 16)
    model_engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    for step in range(100):
        loss = model_engine(torch.randn(4, 16)).sum()
        model_engine.backward(loss)
        model_engine.step()
        if step % 10 == 0:
            model_engine.save_checkpoint("ckpt", tag=f"step{step}")
        if dist.get_rank() == 0:
            torch.save({"loss": loss.item()}, f"ckpt/loss{step}.pt")
    save(model_engine, "ckpt", "final")
    trainer = Trainer(model, args)
    trainer.checkpoint("ckpt", 0)


if __name__ == "__main__":
    main()
