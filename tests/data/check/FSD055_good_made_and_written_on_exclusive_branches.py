"""A checkpoint callback that, for a quantized model, moves the last full save into a folder it makes on rank 0,
and otherwise saves with save_pretrained (which makes its own folder): the folder made on rank 0 and the save are
on the two sides of one `if`, so no run makes it on one rank and writes into it on all (a pattern of public
fine-tuning code; an earlier version paired them)."""

import os

import torch.distributed as dist


def on_save(model, checkpoint_folder, quantized, last_full_model):
    if quantized:
        if dist.get_rank() == 0 and last_full_model != checkpoint_folder:
            os.makedirs(checkpoint_folder, exist_ok=True)
            os.replace(last_full_model, os.path.join(checkpoint_folder, "model.safetensors"))
    else:
        model.save_pretrained(checkpoint_folder)
