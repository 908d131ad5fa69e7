# torch reads TORCH_DISTRIBUTED_DEBUG when it is imported: setting it first must take effect.
import os

os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
import torch.distributed as dist  # noqa: E402

assert dist.get_debug_level() == dist.DebugLevel.DETAIL, dist.get_debug_level()
