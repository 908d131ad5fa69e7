"""FSD077 fixed: the same model, DDP told that some parameters may get no gradient in a step."""
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)
        self.aux = nn.Linear(8, 2)

    def forward(self, x, with_aux=False):
        h = torch.relu(self.body(x))
        if with_aux:
            return self.head(h) + self.aux(h)
        return self.head(h)


dist.init_process_group("gloo")
model = DDP(Net(), find_unused_parameters=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    opt.zero_grad()
    model(torch.randn(4, 8), with_aux=step % 2 == 0).sum().backward()
    opt.step()
