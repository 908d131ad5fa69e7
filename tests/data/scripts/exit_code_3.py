# Fails: rank 0 exits with status 3 (sys.exit), rank 1 exits 0.
import sys

import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.destroy_process_group()
if rank == 0:
    sys.exit(3)
