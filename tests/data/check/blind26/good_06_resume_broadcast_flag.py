import contextlib
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def build_model():
    return nn.Sequential(nn.Linear(128, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 128))


def checkpoint_exists(path, device):
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    if dist.get_rank() == 0 and path.exists():
        flag.fill_(1)
    dist.broadcast(flag, src=0)
    return bool(flag.item())


def maybe_resume(model, opt, path, device):
    if not checkpoint_exists(path, device):
        return 0
    state = torch.load(path, map_location=device)
    model.module.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return state["step"]


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    net = nn.SyncBatchNorm.convert_sync_batchnorm(build_model()).to(device)
    model = DDP(net, device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    path = Path(os.environ.get("CKPT", "/shared/run/train_state.pt"))
    start = maybe_resume(model, opt, path, device)
    accum = 4

    for step in range(start, start + 400):
        micro = step % accum
        ctx = model.no_sync() if micro != accum - 1 else contextlib.nullcontext()
        with ctx:
            x = torch.randn(32, 128, device=device)
            loss = (model(x) - x).pow(2).mean() / accum
            loss.backward()
        if micro == accum - 1:
            opt.step()
            opt.zero_grad()
        if (step + 1) % 100 == 0:
            if dist.get_rank() == 0:
                path.parent.mkdir(parents=True, exist_ok=True)
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step + 1}, path)
            dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
