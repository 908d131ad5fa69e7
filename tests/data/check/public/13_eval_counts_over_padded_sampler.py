# Pattern from https://github.com/RUCAIBox/RecBole/pull/1872 (and https://github.com/pytorch/pytorch/issues/25162):
# the evaluation loader's DistributedSampler padded 10 samples to 12 on 3 GPUs, and the per-rank counts were summed
# over the ranks, so the repeated samples were scored twice and the metric changed with the number of GPUs. Our
# code, details replaced.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


@torch.no_grad()
def evaluate(model, dataset, device):
    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset, shuffle=False))
    hits = torch.zeros(1, device=device)
    count = torch.zeros(1, device=device)
    for users, items in loader:
        scores = model(users.to(device))
        hits += (scores.topk(10).indices == items.to(device).unsqueeze(1)).any(1).sum()
        count += len(users)
    dist.all_reduce(hits)  # <- FSD078
    dist.all_reduce(count)
    return (hits / count).item()
