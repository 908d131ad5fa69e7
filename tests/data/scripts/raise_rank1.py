# Fails: rank 1 raises before the first collective; rank 0 then waits in a barrier.
import torch.distributed as dist

dist.init_process_group("gloo")
try:
    if dist.get_rank() == 1:
        raise ValueError("boom on rank 1")
    dist.barrier()
finally:
    dist.destroy_process_group()
