"""Saves under the global rank 0, or under local rank 0 to a per-node path or a node-local disk."""

import os
import socket

import torch
import torch.distributed as dist


def main(model):
    local_rank = int(os.environ["LOCAL_RANK"])
    node = int(os.environ.get("GROUP_RANK", 0))
    if dist.get_rank() == 0:
        torch.save(model.state_dict(), "/shared/checkpoints/model.pt")
    if local_rank == 0:
        torch.save(model.state_dict(), f"/shared/checkpoints/node{node}.pt")
        torch.save(model.state_dict(), f"/shared/checkpoints/{socket.gethostname()}.pt")
        torch.save(model.state_dict(), "/tmp/model.pt")
    if local_rank == 0 and dist.get_rank() == 0:
        torch.save(model.state_dict(), "/shared/checkpoints/final.pt")
