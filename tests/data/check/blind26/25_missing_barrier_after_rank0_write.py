import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def save_train_state(run_dir, model, step):
    if dist.get_rank() == 0:
        os.makedirs(run_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(run_dir, "train_state.pt"))
        with open(os.path.join(run_dir, "metadata.json"), "w") as f:
            json.dump({"step": step}, f)
        latest = os.path.join(os.path.dirname(run_dir), "latest")
        if os.path.islink(latest):
            os.remove(latest)
        os.symlink(run_dir, latest)
    return run_dir


def verify_checkpoint(run_dir, model):
    with open(os.path.join(run_dir, "metadata.json")) as f:
        meta = json.load(f)
    state = torch.load(os.path.join(run_dir, "train_state.pt"), map_location="cpu")
    ref = model.module.state_dict()
    ok = all(torch.equal(state[k].cpu(), ref[k].cpu()) for k in ref)
    return meta["step"], ok


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(nn.Linear(64, 64).cuda(), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    root = os.environ.get("RUN_ROOT", "/lustre/runs/exp7")

    for step in range(1, 301):
        x = torch.randn(16, 64, device="cuda")
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 100 == 0:
            d = save_train_state(os.path.join(root, f"step_{step}"), model, step)
            saved_step, ok = verify_checkpoint(d, model)
            print(f"rank {dist.get_rank()}: checkpoint step {saved_step} consistent={ok}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
