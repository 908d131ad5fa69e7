"""FSD072 near-miss: the FSDP1 optimizer state converted with FSDP.optim_state_dict_to_load on every rank."""
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = FSDP(torch.nn.Linear(8, 8).cuda())
    optim = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ckpt = torch.load("ckpt.pt", map_location="cpu")
    osd = FSDP.optim_state_dict_to_load(model, optim, ckpt["optim"])
    optim.load_state_dict(osd)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
