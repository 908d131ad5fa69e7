import torch
import torch.distributed as dist


def main():
    torch.cuda.set_device(0)
    dist.init_process_group("nccl")
    gloo = dist.new_group(backend="gloo")
    dist.monitored_barrier(group=gloo)
    dist.destroy_process_group()
