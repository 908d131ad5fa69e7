"""The same hand-offs done right: a barrier between rank 0's write and the others' read, hidden in a helper
(``sync()`` running dist.barrier(), a method running it), or every rank making the directory itself."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, AutoTokenizer


def sync():
    dist.barrier()


def save_checkpoint(model, optimizer, out_dir):
    state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
    torch.save(state, os.path.join(out_dir, "ckpt.pt"))


def load_checkpoint(model, out_dir):
    state = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location="cpu")
    model.module.load_state_dict(state["model"])


def train(model, optimizer, loader, out_dir, rank):
    model = DDP(model)
    for batch in loader:
        model(batch).sum().backward()
        optimizer.step()
    if rank == 0:
        save_checkpoint(model, optimizer, out_dir)
    sync()
    load_checkpoint(model, out_dir)
    best = os.path.join(out_dir, "best.pt")
    if rank == 0:
        torch.save(model.module.state_dict(), best)
    sync()
    model.module.load_state_dict(torch.load(os.path.join(out_dir, "best.pt"), map_location="cpu"))


def write_shards(optimizer, run_dir, rank):
    os.makedirs(run_dir, exist_ok=True)
    torch.save(optimizer.state_dict(), f"{run_dir}/optim_{rank}.pt")


class Exporter:
    def __init__(self, model, tokenizer):
        self.model = model
        self.tokenizer = tokenizer
        self.is_main = dist.get_rank() == 0

    def save(self, path):
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)

    def wait(self):
        dist.barrier()

    def export_and_reload(self, path):
        if self.is_main:
            self.save(path)
        self.wait()
        tokenizer = AutoTokenizer.from_pretrained(path)
        return AutoModelForCausalLM.from_pretrained(path), tokenizer
