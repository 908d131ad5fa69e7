# A gloo-only group, and a one-process group over a HashStore (used to run distributed-aware code alone):
# neither has NCCL's teardown to get wrong, so leaving them to interpreter exit is not reported.
import torch.distributed as dist


def replay():
    dist.init_process_group(backend="gloo", world_size=1, rank=0, store=dist.HashStore())


def cpu_workers(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    dist.barrier()


if __name__ == "__main__":
    replay()
