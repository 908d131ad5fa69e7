"""A plain loop: gather of validation scores to rank 0, then a break taken on the gathered list."""

import torch
import torch.distributed as dist


def fit(model, loader, optimizer, score):
    world = dist.get_world_size()
    for epoch in range(50):
        for x, y in loader:
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
        mine = torch.tensor([score(model)])
        scores = [torch.zeros(1) for _ in range(world)] if dist.get_rank() == 0 else None
        dist.gather(mine, gather_list=scores, dst=0)
        if scores and max(s.item() for s in scores) > 0.99:  # <- FSD038
            break
        if dist.get_rank() == 0:
            dist.barrier()  # <- FSD003
        if dist.get_rank() != 0:
            continue  # FSD003 speaks for the all_reduce it skips, not FSD037
        dist.all_reduce(mine)  # <- FSD003


def accumulate(net, loader, optimizer, accum=4):
    """Gradient accumulation that saves nothing: the forward runs before no_sync(), so the backward inside still
    all-reduces (the step after it is on synchronised gradients: a waste, not a wrong result)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = DDP(net)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / accum
        if (i + 1) % accum:
            with model.no_sync():  # <- FSD046
                loss.backward()
        else:
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
