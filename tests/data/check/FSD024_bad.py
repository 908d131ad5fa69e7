import torch
import torch.distributed as dist


def main():
    torch.cuda.set_device(0)
    dist.init_process_group("nccl")
    dist.monitored_barrier()  # <- FSD024
    dist.destroy_process_group()
