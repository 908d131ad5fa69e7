"""The same gathers with the sizes made each rank's own: a slice to the batch's longest length, the mask applied
before the gather (an object gather of it stays fine)."""

import torch
import torch.distributed as dist


def gather_fixed(ids, lengths, world):
    ids = ids[:, : lengths.max().item()]
    out = [torch.empty_like(ids) for _ in range(world)]
    dist.all_gather(out, ids)  # <- FSD088
    return out


def gather_with_mask(logits, labels, world):
    mask = labels != -100
    preds = logits.argmax(-1)[mask]
    out_p = [torch.empty_like(preds) for _ in range(world)]
    out_m = [torch.empty_like(mask) for _ in range(world)]
    dist.all_gather(out_p, preds)  # <- FSD088
    dist.all_gather(out_m, mask)
    return torch.cat(out_p)[torch.cat(out_m)]


def gather_objects(logits, labels, world):
    kept = logits.argmax(-1)[labels != -100]
    out = [None] * world
    dist.all_gather_object(out, kept)
    return out
