"""A plain multi-GPU accelerate loop (no FSDP, no DeepSpeed in the file): save_state on the main process only writes
local files and meets no other rank, so it is not a framework collective here."""

import torch
from accelerate import Accelerator


def main(model, loader):
    accelerator = Accelerator(mixed_precision="bf16")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        accelerator.backward(model(**batch).loss)
        optimizer.step()
        optimizer.zero_grad()
        if accelerator.is_main_process and step % 1000 == 0:
            accelerator.save_state(f"ckpt/step-{step}")
