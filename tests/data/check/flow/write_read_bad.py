"""Rank 0 writes, the others read at once: an accelerate export, a Trainer method, a config file in a helper."""

import json

import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

accelerator = Accelerator()


def export(model, output_dir):
    unwrapped = accelerator.unwrap_model(model)
    if accelerator.is_main_process:
        unwrapped.save_pretrained(output_dir)
    reloaded = AutoModelForCausalLM.from_pretrained(output_dir)  # <- FSD055
    return reloaded


class Trainer:
    def __init__(self, model, rank):
        self.model = model
        self.rank = rank

    def snapshot(self, path):
        if self.rank == 0:
            torch.save({"model": self.model.state_dict()}, path)
        blob = torch.load(path, map_location="cpu", weights_only=True)  # <- FSD055
        return blob


def share_vocab(vocab, path, rank):
    if rank == 0:
        with open(path, "w") as f:
            json.dump(vocab, f)
    with open(path) as f:  # <- FSD055
        return json.load(f)
