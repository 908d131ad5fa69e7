# Each path makes the collective exactly once: one branch calls it and leaves the iteration, every other path
# calls it after the if; and rank 0 drives a serving loop through a callback that runs the same collectives as
# the workers' loop.
import torch.distributed as dist


def step(params, pads, rank, world_size, state):
    for base in range(0, len(params), world_size):
        if base + rank < len(params):
            if not state:
                dist.all_gather(pads[base:base + world_size], pads[base + rank])
                continue
            pads[base + rank].mul_(0.5)
        dist.all_gather(pads[base:base + world_size], pads[base + rank])


def generate(prompt):
    dist.barrier()
    dist.broadcast_object_list([prompt], src=0)


def worker():
    while True:
        dist.barrier()
        box = [None]
        dist.broadcast_object_list(box, src=0)


def create_demo(button):
    button.click(fn=generate)


def serve(button):
    if dist.get_rank() == 0:
        create_demo(button)
    else:
        worker()


def load_once(url, rank, num_gpus):
    is_leader = rank == 0
    if not is_leader and num_gpus > 1:
        dist.barrier()  # the leader downloads first
    data = open(url).read()
    if is_leader and num_gpus > 1:
        dist.barrier()  # then the others read its copy
    return data


def prepare_once(rank):
    if rank > 0:
        dist.barrier()  # the other ranks wait for rank 0
    if rank == 0:
        dist.barrier()  # rank 0 has prepared the data and releases them
