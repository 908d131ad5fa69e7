"""Gathers of tensors whose shapes are the same on every rank: a slice by a configured length, a mask kept
beside the values (not applied), and an object gather of a masked selection."""

import torch
import torch.distributed as dist


def gather_fixed(ids, max_len, world):
    ids = ids[:, :max_len]
    out = [torch.empty_like(ids) for _ in range(world)]
    dist.all_gather(out, ids)
    return out


def gather_with_mask(logits, labels, world):
    mask = labels != -100
    preds = logits.argmax(-1)
    out_p = [torch.empty_like(preds) for _ in range(world)]
    out_m = [torch.empty_like(mask) for _ in range(world)]
    dist.all_gather(out_p, preds)
    dist.all_gather(out_m, mask)
    return torch.cat(out_p)[torch.cat(out_m)]


def gather_objects(logits, labels, world):
    kept = logits.argmax(-1)[labels != -100]
    out = [None] * world
    dist.all_gather_object(out, kept)
    return out
