# Fails: an all_gather whose ranks disagree on the dtype (fp32 on rank 0, bf16 on rank 1).  Rank 1 receives more
# bytes than it expects and gloo aborts the process (SIGABRT); rank 0 receives fewer, completes, exits 0.
import time

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 1:
        time.sleep(1.0)  # rank 0's data is already there when rank 1 enters: it gets its own data out first
    t = torch.ones(4, dtype=torch.float32 if rank == 0 else torch.bfloat16)
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    print(f"rank {rank} gathered {out}")


main()
