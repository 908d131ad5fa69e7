"""Rank 0 writes through a helper or a method, every rank reads at once: a DDP script whose save and load helpers
take the run directory, a Trainer class exporting with save_pretrained, a path kept in a variable, and a directory
that rank 0 alone creates before every rank writes its own shard into it (the readers race the writer: no file, a
partial one, or the previous one; the others' writes fail with FileNotFoundError)."""

import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM, AutoTokenizer


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
    load_checkpoint(model, out_dir)  # <- FSD055
    best = os.path.join(out_dir, "best.pt")
    if rank == 0:
        torch.save(model.module.state_dict(), best)
    model.module.load_state_dict(torch.load(os.path.join(out_dir, "best.pt"), map_location="cpu"))  # <- FSD055


def write_shards(optimizer, run_dir, rank):
    if rank == 0:
        os.makedirs(run_dir, exist_ok=True)
    torch.save(optimizer.state_dict(), f"{run_dir}/optim_{rank}.pt")  # <- FSD055


class Exporter:
    def __init__(self, model, tokenizer):
        self.model = model
        self.tokenizer = tokenizer
        self.is_main = dist.get_rank() == 0

    def save(self, path):
        self.model.save_pretrained(path)
        self.tokenizer.save_pretrained(path)

    def export_and_reload(self, path):
        if self.is_main:
            self.save(path)
        tokenizer = AutoTokenizer.from_pretrained(path)  # <- FSD055
        return AutoModelForCausalLM.from_pretrained(path), tokenizer
