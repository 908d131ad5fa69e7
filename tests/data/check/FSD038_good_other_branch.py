"""torchao-style aggregation: dist.reduce(..., dst=0) in one arm of an if; the test in the else arm reads the tensor
where no reduce ran (a type test, the same on every rank)."""

import torch.distributed as dist
from torch.distributed.tensor import DTensor


def _is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def maybe_async_aggregate(handle_buf, input_tensor):
    if dist.is_initialized() and not isinstance(input_tensor, DTensor):
        handle = dist.reduce(input_tensor, dst=0, async_op=True)
        handle_buf.append((input_tensor, handle))
    else:
        if isinstance(input_tensor, DTensor):
            input_tensor = input_tensor.full_tensor()
        if _is_main_process():
            handle_buf.append((input_tensor, None))
