# FSD027 fix fixture: activation checkpointing under DDP without use_reentrant; `check --fix` passes
# use_reentrant=False, and the fixed script checks the gradients against the same model without checkpointing.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x, ckpt=True):
        h = checkpoint(self.a, x) if ckpt else self.a(x)
        return self.b(torch.relu(h))


def main():
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        net = Net()
        ref = Net()
        ref.load_state_dict(net.state_dict())
        model = DDP(net)
        x = torch.randn(4, 8)
        model(x).sum().backward()
        ref(x, ckpt=False).sum().backward()
        for p, q in zip(net.parameters(), ref.parameters()):
            err = (p.grad - q.grad).abs().max().item()
            assert err <= 1e-6, f"checkpointed gradient differs by {err} (tol 1e-6)"
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
