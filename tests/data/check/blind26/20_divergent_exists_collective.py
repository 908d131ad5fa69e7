import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class CheckpointManager:
    def __init__(self, root):
        self.root = Path(root)

    def save(self, model, opt, step):
        if dist.get_rank() == 0:
            self.root.mkdir(parents=True, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step},
                       self.root / "train_state.pt")
        dist.barrier()

    def load(self, model, opt, device):
        path = self.root / "train_state.pt"
        payload = [None]
        if path.exists():
            if dist.get_rank() == 0:
                payload[0] = torch.load(path, map_location="cpu")
            dist.broadcast_object_list(payload, src=0)
        state = payload[0]
        if state is None:
            return 0
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        return state["step"]


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    model = DDP(nn.Linear(128, 128).to(device), device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ckpt = CheckpointManager(os.environ.get("CKPT_DIR", "/shared/nfs/run1"))
    start = ckpt.load(model, opt, device)

    for step in range(start, start + 100):
        x = torch.randn(32, 128, device=device)
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % 50 == 0:
            ckpt.save(model, opt, step + 1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
