import os
import torch
import torch.distributed as dist


def build_pair_groups(rank, world_size, pair_size=2):
    start = (rank // pair_size) * pair_size
    grp_ranks = list(range(start, min(start + pair_size, world_size)))
    grp = dist.new_group(ranks=grp_ranks)
    return grp, grp_ranks


def hierarchical_allreduce(tensor, intra_group, leaders_group, is_leader):
    dist.all_reduce(tensor, group=intra_group)
    if is_leader:
        dist.all_reduce(tensor, group=leaders_group)
    dist.broadcast(tensor, src=dist.get_rank() - dist.get_rank() % 2, group=intra_group)
    return tensor


def main():
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    intra_group, members = build_pair_groups(rank, world_size)
    leaders = list(range(0, world_size, 2))
    leaders_group = dist.new_group(ranks=leaders)
    is_leader = rank in leaders

    print(f"{rank} before barrier: {members}")
    dist.barrier(group=intra_group)

    model = torch.nn.Linear(1024, 1024).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(100):
        x = torch.randn(64, 1024, device="cuda")
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            hierarchical_allreduce(p.grad, intra_group, leaders_group, is_leader)
            p.grad.div_(world_size)
        opt.step()
    print(f"{rank} done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
