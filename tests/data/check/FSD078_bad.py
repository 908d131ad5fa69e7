"""FSD078: accuracy over predictions gathered from a DistributedSampler's shards; the sampler repeats samples to
give every rank as many, and the gathered whole keeps them."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def evaluate(model, dataset):
    sampler = DistributedSampler(dataset, shuffle=False)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    preds, labels = [], []
    with torch.no_grad():
        for x, y in loader:
            preds.append(model(x).argmax(-1))
            labels.append(y)
    preds, labels = torch.cat(preds), torch.cat(labels)
    all_preds = [torch.zeros_like(preds) for _ in range(dist.get_world_size())]
    all_labels = [torch.zeros_like(labels) for _ in range(dist.get_world_size())]
    dist.all_gather(all_preds, preds)  # <- FSD078
    dist.all_gather(all_labels, labels)
    return (torch.cat(all_preds) == torch.cat(all_labels)).float().mean().item()


dist.init_process_group("gloo")
data = TensorDataset(torch.randn(11, 4), torch.randint(0, 2, (11,)))
print(evaluate(torch.nn.Linear(4, 2), data))
