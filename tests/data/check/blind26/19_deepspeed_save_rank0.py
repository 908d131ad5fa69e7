import argparse

import deepspeed
import torch
import torch.nn as nn


def get_model():
    return nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))


def ds_config(args):
    return {
        "train_micro_batch_size_per_gpu": args.micro_bs,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "AdamW", "params": {"lr": args.lr}},
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": 3},
    }


class Runner:
    def __init__(self, args):
        self.args = args
        model = get_model()
        self.engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                    config=ds_config(args))

    def step(self):
        x = torch.randn(self.args.micro_bs, 1024, device=self.engine.device, dtype=torch.bfloat16)
        loss = self.engine(x).float().pow(2).mean()
        self.engine.backward(loss)
        self.engine.step()
        return loss.item()

    def maybe_save(self, step):
        if step % self.args.save_every != 0:
            return
        if self.engine.global_rank == 0:
            self.engine.save_checkpoint(self.args.out_dir, tag=f"step{step}")

    def run(self):
        for step in range(1, self.args.steps + 1):
            loss = self.step()
            if self.engine.global_rank == 0 and step % 10 == 0:
                print(step, loss)
            self.maybe_save(step)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1)
    p.add_argument("--micro-bs", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--save-every", type=int, default=50)
    p.add_argument("--out-dir", default="ckpt")
    deepspeed.init_distributed()
    Runner(p.parse_args()).run()
