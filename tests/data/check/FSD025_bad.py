import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def main(state):
    torch.cuda.set_device(0)
    dist.init_process_group("nccl")
    fut = dcp.async_save(state, checkpoint_id="ckpt")  # <- FSD025
    fut.result()
    dist.destroy_process_group()
