"""An accelerate loop with an FSDP plugin; the checkpoint is saved on the main process only, through a helper
(accelerate issues: save_state / get_state_dict hang under FSDP when only the main process calls them)."""

import torch
from accelerate import Accelerator, FullyShardedDataParallelPlugin


def save(accelerator, model, out):
    state = accelerator.get_state_dict(model)
    accelerator.save(state, f"{out}/model.bin")


def main(model, loader):
    plugin = FullyShardedDataParallelPlugin(state_dict_type="FULL_STATE_DICT")
    accelerator = Accelerator(fsdp_plugin=plugin)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0 and accelerator.is_main_process:
            accelerator.save_state(f"ckpt/{step}")  # <- FSD039
    if accelerator.is_main_process:
        save(accelerator, model, "final")  # <- FSD039
