# FSD014 fix fixture: a script that forms the process group and never destroys it; `check --fix` appends
# dist.destroy_process_group() to main(), and the fixed script checks at exit that the group is gone.
import atexit
import os

import torch
import torch.distributed as dist


def _check_destroyed():
    if dist.is_initialized():
        print("the process group is still alive at exit", flush=True)
        os._exit(3)


def main():
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == dist.get_world_size()
    atexit.register(_check_destroyed)


if __name__ == "__main__":
    main()
