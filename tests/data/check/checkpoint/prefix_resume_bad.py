"""A DDP script that resumes before wrapping, with strict=False "to be safe": the checkpoint it writes holds the
wrapper's state dict (every key "module.<name>"), so on resume no key matches the bare model, strict=False hides
it, nothing is loaded and training silently restarts from random weights."""

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="ckpt/last.pt")
    args = parser.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = torch.nn.Linear(16, 16).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if os.path.exists(args.resume):
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"], strict=False)  # <- FSD069
        optimizer.load_state_dict(ckpt["optimizer"])
    model = DDP(model, device_ids=[local_rank])
    for epoch in range(3):
        loss = model(torch.randn(8, 16, device="cuda")).sum()
        loss.backward()
        optimizer.step()
        if dist.get_rank() == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, args.resume)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
