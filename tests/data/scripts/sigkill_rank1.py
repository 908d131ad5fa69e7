# Fails: rank 1 is killed by SIGKILL (as the OOM killer would); rank 0 waits in a barrier.
import os
import signal

import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.barrier()
dist.destroy_process_group()
