import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class MultiTaskModel(nn.Module):
    def __init__(self, dim=256, n_cls=5, n_tags=17):
        super().__init__()
        self.encoder = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.cls_head = nn.Linear(2 * dim, n_cls)
        self.tag_head = nn.Linear(2 * dim, n_tags)

    def forward(self, x, task):
        h, _ = self.encoder(x)
        if task == "cls":
            return self.cls_head(h.mean(1))
        return self.tag_head(h)


def batches(task_cycle, dim, device):
    while True:
        for task in task_cycle:
            x = torch.randn(8, 20, dim, device=device)
            if task == "cls":
                y = torch.randint(0, 5, (8,), device=device)
            else:
                y = torch.randint(0, 17, (8, 20), device=device)
            yield task, x, y


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--dim", type=int, default=256)
    args = p.parse_args()
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)

    model = DDP(MultiTaskModel(args.dim).to(device), device_ids=[local_rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    stream = batches(["cls", "tag"], args.dim, device)

    for step in range(args.steps):
        task, x, y = next(stream)
        out = model(x, task)
        loss = nn.functional.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if dist.get_rank() == 0 and step % 100 == 0:
            print(step, task, loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
