"""FSD070: every rank of a DDP job writes the same checkpoint file at the end of each epoch."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def train(args):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters())
    for epoch in range(args.epochs):
        loss = model(torch.randn(4, 8, device="cuda")).sum()
        loss.backward()
        opt.step()
        torch.save({"model": model.module.state_dict(), "epoch": epoch}, os.path.join(args.out, "ckpt.pt"))  # <- FSD070
    dist.destroy_process_group()


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="out")
    train(parser.parse_args())
