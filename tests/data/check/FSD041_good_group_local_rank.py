"""A ColossalAI-style DreamBooth script (diffusers' research example): ``gpc.get_local_rank(ParallelMode.DATA)`` is
the rank inside the data-parallel group, not the rank on this node; in a pure data-parallel job only the global rank
0 has 0 there, so one process writes the checkpoint."""

import os

import torch
from colossalai.context import ParallelMode
from colossalai.core import global_context as gpc


def main(args, unet, loader, optimizer):
    local_rank = gpc.get_local_rank(ParallelMode.DATA)
    for step, batch in enumerate(loader):
        loss = unet(batch).loss
        optimizer.backward(loss)
        optimizer.step()
        if step % args.save_steps == 0 and local_rank == 0:
            torch.save(unet.state_dict(), os.path.join(args.output_dir, f"checkpoint-{step}.pt"))
    if local_rank == 0:
        torch.save(unet.state_dict(), os.path.join(args.output_dir, "final.pt"))
