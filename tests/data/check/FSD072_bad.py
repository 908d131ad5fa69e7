"""FSD072: FSDP1 optimizer state saved and loaded as a plain optimizer.state_dict() from one file."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def resume(model, optimizer, path):
    ckpt = torch.load(path, map_location="cpu")
    optimizer.load_state_dict(ckpt["optim"])  # <- FSD072


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = FSDP(torch.nn.Linear(8, 8).cuda())
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ckpt = torch.load("ckpt.pt", map_location="cpu")
    optim.load_state_dict(ckpt["optim"])  # <- FSD072
    resume(model, optim, "ckpt.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
