# Hangs: rank 1 skips the all_reduce (uneven work), so rank 0 waits in it forever.
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.ones(1)
if dist.get_rank() == 0:
    dist.all_reduce(t)
else:
    time.sleep(600)
dist.destroy_process_group()
