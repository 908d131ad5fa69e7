"""Accelerate under DeepSpeed: every process saves (DeepSpeed's save_checkpoint is each rank's shard), on the other
backends the main process alone (a replicated model); a pattern of public fine-tuning code. An earlier version read
the `or` as a rank-0-only save."""

from accelerate import Accelerator
from accelerate.utils import DistributedType

accelerator = Accelerator()


def save(step: int) -> None:
    if accelerator.distributed_type == DistributedType.DEEPSPEED or accelerator.is_main_process:
        accelerator.save_state(f"checkpoints/step-{step}")
