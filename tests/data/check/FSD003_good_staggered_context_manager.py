"""A context manager that staggers work between the even and the odd ranks (a pattern from public instruction-tuning
code): the even ranks wait at a barrier on entering, the odd ranks at one on leaving, then all at a last one; every
rank calls two barriers, so none hangs. An earlier version read ``rank % 2 == 0`` as "rank 0" and paired the
conditions only inside one function, and flagged both barriers."""

import torch.distributed as dist


class Staggered:
    def __init__(self, local_rank: int, world_size: int):
        self.local_rank = local_rank
        self.world_size = world_size

    def __enter__(self):
        if self.world_size > 1 and self.local_rank % 2 == 0:
            dist.barrier()
        return self

    def __exit__(self, *args):
        if self.world_size > 1:
            if self.local_rank % 2 == 1:
                dist.barrier()
            dist.barrier()

    def __call__(self, func):
        def wrapped(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapped
