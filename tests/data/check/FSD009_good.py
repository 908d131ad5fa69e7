import torch.distributed as dist


def groups():
    rank = dist.get_rank()
    pair = dist.new_group([0, 1])  # every rank creates it, members or not
    if rank in (0, 1):
        return pair


def rpc_trainers(rank):
    if rank <= 1:  # the trainers form their own default group
        dist.init_process_group("gloo", rank=rank, world_size=2, init_method="tcp://localhost:29500")
