"""A MoCo-style queue: the batch is cut to its own longest sequence (a bound read from the data) and handed to a
method that hands it to the file's concat_all_gather helper; and Accelerate's gather of nonzero() indices."""

import torch
import torch.distributed as dist


@torch.no_grad()
def concat_all_gather(tensor):
    out = [torch.ones_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor, async_op=False)
    return torch.cat(out, dim=0)


class Queue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("ids", torch.zeros(4096, 128, dtype=torch.long))

    @torch.no_grad()
    def enqueue(self, batch_ids):
        gathered = concat_all_gather(batch_ids)
        self.ids[: gathered.shape[0], : gathered.shape[1]] = gathered

    def forward(self, ids, lengths):
        longest = int(lengths.max())
        ids = ids[:, :longest]
        self.enqueue(ids)  # <- FSD088
        return ids


def hits(accelerator, scores):
    found = (scores > 0.5).nonzero()
    return accelerator.gather(found)  # <- FSD088
