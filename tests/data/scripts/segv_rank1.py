# Fails: rank 1 dereferences NULL (SIGSEGV) in the script's own line; rank 0 then loses its peer in a barrier.
import ctypes

import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    ctypes.string_at(0)
dist.barrier()
dist.destroy_process_group()
