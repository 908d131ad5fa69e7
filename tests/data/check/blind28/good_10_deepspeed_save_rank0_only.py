import argparse
import torch
import torch.nn as nn
import deepspeed
from torch.utils.data import TensorDataset


class Denoiser(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, dim))

    def forward(self, x):
        return self.net(x)


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1)
    p.add_argument("--output_dir", default="ckpt")
    p.add_argument("--checkpointing_steps", type=int, default=500)
    p = deepspeed.add_config_arguments(p)
    return p.parse_args()


def main():
    args = get_args()
    deepspeed.init_distributed()
    ds_config = {
        "train_micro_batch_size_per_gpu": 16,
        "gradient_accumulation_steps": 1,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
        "bf16": {"enabled": True},
        "zero_optimization": {"stage": 2},
    }
    model = Denoiser()
    data = TensorDataset(torch.randn(100000, 512))
    engine, _, loader, _ = deepspeed.initialize(
        args=args, model=model, model_parameters=model.parameters(), training_data=data, config=ds_config
    )
    global_step = 0
    for epoch in range(10):
        for (x,) in loader:
            x = x.to(engine.device, dtype=torch.bfloat16)
            noise = torch.randn_like(x)
            loss = nn.functional.mse_loss(engine(x + noise), noise)
            engine.backward(loss)
            engine.step()
            global_step += 1
            if global_step % args.checkpointing_steps == 0:
                engine.save_checkpoint(args.output_dir, tag=f"step{global_step}")
                if engine.global_rank == 0:
                    print(f"saved step {global_step}")


if __name__ == "__main__":
    main()
