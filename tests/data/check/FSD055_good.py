"""The same with a barrier between rank 0's save and every rank's load."""

import torch
import torch.distributed as dist


def save_and_reload(model, path):
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), path)
    dist.barrier()
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state)
