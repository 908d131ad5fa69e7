# Pattern from https://github.com/FareedKhan-dev/train-llm-from-scratch/pull/32: after the training loop the final
# evaluation ran on the main process only (`if ctx.is_main:`) through the DDP-wrapped model; its forward launched a
# collective with no peer and rank 0 waited out the NCCL watchdog. Our code, details replaced.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TinyLM(nn.Module):
    def __init__(self, vocab=100, dim=32, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.register_buffer("pos_ids", torch.arange(seq))  # a buffer: DDP broadcasts it in forward
        self.pos = nn.Embedding(seq, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, x):
        return self.head(self.tok(x) + self.pos(self.pos_ids[: x.shape[1]]))


class Ctx:
    def __init__(self):
        self.rank = int(os.environ["RANK"])
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.is_main = self.rank == 0


def main():
    ctx = Ctx()
    dist.init_process_group("nccl")
    torch.cuda.set_device(ctx.local_rank)
    net = TinyLM().cuda()
    model = DDP(net, device_ids=[ctx.local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(100):
        x = torch.randint(0, 100, (8, 16), device="cuda")
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    if ctx.is_main:
        model.eval()
        with torch.no_grad():
            x = torch.randint(0, 100, (8, 16), device="cuda")
            val = nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())  # <- FSD045
        print(f"final val loss {val.item():.3f}")
        torch.save(model.module.state_dict(), "final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
