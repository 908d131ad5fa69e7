"""The accelerate FSDP loop done right: every process calls save_state and get_state_dict; only the main process
writes the gathered state."""

from accelerate import Accelerator, FullyShardedDataParallelPlugin


def main(model, loader):
    accelerator = Accelerator(fsdp_plugin=FullyShardedDataParallelPlugin())
    model, loader = accelerator.prepare(model, loader)
    accelerator.save_state("ckpt")
    state = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        accelerator.save(state, "final/model.bin")
