"""A DeepSpeed ZeRO fine-tune that saves its checkpoint on rank 0 only: engine.save_checkpoint is made by every
rank (each writes its own partition of the optimizer states, then they meet in a barrier), so rank 0 waits for
ranks that never come (DeepSpeed issues: "save_checkpoint hangs when called only on rank 0")."""

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
        if self.rank == 0:
            self.engine.save_checkpoint(out, tag=f"epoch{epoch}")  # <- FSD039


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
        if step % 10 == 0 and args.local_rank == 0:
            model_engine.save_checkpoint("ckpt", tag=f"step{step}")  # <- FSD039
    if dist.get_rank() == 0:
        save(model_engine, "ckpt", "final")  # <- FSD039
    trainer = Trainer(model, args)
    trainer.checkpoint("ckpt", 0)


if __name__ == "__main__":
    main()
