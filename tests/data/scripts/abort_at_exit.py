# Passes its work, then dies in C-level teardown: exit() runs the C exit handlers (__cxa_atexit, glibc),
# and abort() is registered as one.
# This is how torch 2.13's teardown race looks to a launcher ("terminate called without an active
# exception", SIGABRT after the script's last line).
import ctypes
import os
import sys

import torch.distributed as dist

dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
libc = ctypes.CDLL(None)
if os.environ["RANK"] == "1":
    print("terminate called without an active exception", file=sys.stderr)  # what std::terminate prints there
    libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)
print("work done")
