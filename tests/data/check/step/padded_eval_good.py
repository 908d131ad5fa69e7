"""FSD078 near-misses, one edit from padded_eval_bad.py: the evaluation sampler drops the uneven tail
(drop_last=True, the remainder evaluated apart on rank 0 as pytorch/examples' imagenet does), the gathered rows are
cut to len(dataset); and a training loop over the padded sampler (repeats there are harmless)."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset


def build_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset, shuffle=False, drop_last=True))


class Trainer:
    def __init__(self, model, val_set):
        self.model = model
        self.val_set = val_set
        self.val_loader = build_loader(val_set, 4)

    def validate(self):
        correct = torch.zeros(1)
        seen = torch.zeros(1)
        with torch.no_grad():
            for x, y in self.val_loader:
                correct += (self.model(x).argmax(-1) == y).sum()
                seen += len(y)
            covered = len(self.val_loader.sampler) * dist.get_world_size()
            if dist.get_rank() == 0 and covered < len(self.val_set):
                for x, y in DataLoader(Subset(self.val_set, range(covered, len(self.val_set))), batch_size=4):
                    correct += (self.model(x).argmax(-1) == y).sum()
                    seen += len(y)
        dist.all_reduce(correct)
        dist.all_reduce(seen)
        return (correct / seen).item()


def score(model, loader):
    rows = []
    for i, (x, y) in enumerate(loader):
        rows += (model(x).argmax(-1) == y).tolist()
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, rows)
    flat = [gathered[r][i] for i in range(len(gathered[0])) for r in range(len(gathered))][: len(loader.dataset)]
    return sum(flat) / len(flat)


def train(model, loader, opt):
    losses = []
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    dist.all_reduce(torch.stack(losses))


dist.init_process_group("gloo")
val = TensorDataset(torch.randn(11, 4), torch.randint(0, 2, (11,)))
net = torch.nn.Linear(4, 2)
print(Trainer(net, val).validate())
padded = DataLoader(val, batch_size=4, sampler=DistributedSampler(val, shuffle=False))
print(score(net, padded))
train(net, padded, torch.optim.SGD(net.parameters(), lr=0.1))
