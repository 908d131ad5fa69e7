"""The same with the readers made to wait: wait_for_everyone(), a barrier in a helper, a broadcast of the content."""

import json

import torch
import torch.distributed as dist
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

accelerator = Accelerator()


def export(model, output_dir):
    unwrapped = accelerator.unwrap_model(model)
    if accelerator.is_main_process:
        unwrapped.save_pretrained(output_dir)
    accelerator.wait_for_everyone()
    return AutoModelForCausalLM.from_pretrained(output_dir)


def sync():
    dist.barrier()


class Trainer:
    def __init__(self, model, rank):
        self.model = model
        self.rank = rank

    def snapshot(self, path):
        if self.rank == 0:
            torch.save({"model": self.model.state_dict()}, path)
        sync()
        return torch.load(path, map_location="cpu", weights_only=True)


def share_vocab(vocab, path, rank):
    if rank == 0:
        with open(path, "w") as f:
            json.dump(vocab, f)
        with open(path) as f:  # rank 0 reads back what it wrote itself
            print(json.load(f))
    box = [vocab]
    dist.broadcast_object_list(box, src=0)
    with open(path) as f:
        return json.load(f)


def build_index(path, io_group):
    if dist.get_rank() == 0:
        torch.save(torch.arange(10), path)
    counts = torch.ones(1)
    dist.all_reduce(counts, group=io_group)  # a collective on a subgroup orders the write before the reads too
    return torch.load(path, map_location="cpu")
