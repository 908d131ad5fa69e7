"""The same gather done right: the sizes are exchanged first, each rank pads to the largest, and the parts are
cut back after the gather; the labels go through all_gather_object, which takes any size."""

import torch
import torch.distributed as dist


@torch.no_grad()
def gather_predictions(model, loader, device):
    preds, labels = [], []
    for x, y in loader:
        logits = model(x.to(device))
        keep = y != -100
        preds.append(logits.argmax(-1)[keep.to(device)])
        labels.append(y[keep].to(device))
    preds = torch.cat(preds)
    world = dist.get_world_size()
    sizes = [torch.zeros(1, dtype=torch.long, device=device) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([preds.numel()], device=device))
    longest = int(max(s.item() for s in sizes))
    padded = torch.full((longest,), -1, dtype=preds.dtype, device=device)
    padded[: preds.numel()] = preds
    out = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(out, padded)
    gathered_labels = [None] * world
    dist.all_gather_object(gathered_labels, torch.cat(labels).cpu())
    return torch.cat([o[: int(s.item())] for o, s in zip(out, sizes)]), gathered_labels
