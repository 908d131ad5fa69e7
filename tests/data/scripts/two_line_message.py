# Fails: rank 1 raises an exception whose message has two lines; the report must keep both.
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    raise ValueError("first line of the message\nsecond line of the message")
dist.destroy_process_group()
