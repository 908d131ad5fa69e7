"""FSD078 shapes: counts summed over a padded sampler in a Trainer (the loader built by a helper), and
all_gather_object of per-sample results in a script."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def build_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset, shuffle=False, drop_last=False))


class Trainer:
    def __init__(self, model, val_set):
        self.model = model
        self.val_loader = build_loader(val_set, 4)

    def validate(self):
        correct = torch.zeros(1)
        seen = torch.zeros(1)
        with torch.no_grad():
            for x, y in self.val_loader:
                correct += (self.model(x).argmax(-1) == y).sum()
                seen += len(y)
        dist.all_reduce(correct)  # <- FSD078
        dist.all_reduce(seen)
        return (correct / seen).item()


def score(model, loader):
    rows = []
    for i, (x, y) in enumerate(loader):
        rows += (model(x).argmax(-1) == y).tolist()
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, rows)  # <- FSD078
    flat = [r for part in gathered for r in part]
    return sum(flat) / len(flat)


dist.init_process_group("gloo")
val = TensorDataset(torch.randn(11, 4), torch.randint(0, 2, (11,)))
net = torch.nn.Linear(4, 2)
print(Trainer(net, val).validate())
print(score(net, DataLoader(val, batch_size=4, sampler=DistributedSampler(val, shuffle=False))))
