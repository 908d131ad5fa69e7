"""Rank 0 saves the trained weights and every rank reloads them at once: nothing makes the readers wait."""

import torch
import torch.distributed as dist


def save_and_reload(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    state = torch.load(path, map_location="cpu")  # <- FSD055
    model.load_state_dict(state)
