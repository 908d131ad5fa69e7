"""Predictions kept by a mask (the ignored label positions dropped) are all-gathered as they are: each rank holds
a different number, and dist.all_gather needs one shape on every rank."""

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
    out = [torch.empty_like(preds) for _ in range(dist.get_world_size())]
    dist.all_gather(out, preds)  # <- FSD088
    return torch.cat(out)
