import math
import os

import torch
import torch.nn as nn
from accelerate import Accelerator
from accelerate.utils import DeepSpeedPlugin
from torch.utils.data import DataLoader, TensorDataset


class GroundingAdapter(nn.Module):
    def __init__(self, dim=1024):
        super().__init__()
        self.fuser = nn.MultiheadAttention(dim, 8, batch_first=True)
        self.gate = nn.Parameter(torch.zeros(1))
        self.out = nn.Linear(dim, dim)

    def forward(self, latents, boxes):
        fused, _ = self.fuser(latents, boxes, boxes)
        return self.out(latents + torch.tanh(self.gate) * fused)


def get_dataloader(bs):
    ds = TensorDataset(torch.randn(4096, 64, 1024), torch.randn(4096, 30, 1024))
    return DataLoader(ds, batch_size=bs, shuffle=True)


def main(output_dir="out", checkpointing_steps=500, max_train_steps=5000):
    ds_plugin = DeepSpeedPlugin(zero_stage=2, gradient_accumulation_steps=1)
    accelerator = Accelerator(mixed_precision="bf16", deepspeed_plugin=ds_plugin)

    model = GroundingAdapter()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    loader = get_dataloader(bs=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    global_step = 0
    epochs = math.ceil(max_train_steps / len(loader))
    for _ in range(epochs):
        for latents, boxes in loader:
            with accelerator.accumulate(model):
                pred = model(latents, boxes)
                loss = nn.functional.mse_loss(pred.float(), latents.float())
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()

            if accelerator.sync_gradients:
                global_step += 1
                if accelerator.is_main_process:
                    if global_step % checkpointing_steps == 0:
                        save_path = os.path.join(output_dir, f"checkpoint-{global_step}")
                        accelerator.save_state(save_path)
                        print(f"Saved state to {save_path}")
            if global_step >= max_train_steps:
                break

    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main()
