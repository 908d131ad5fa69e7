"""The plain loop done right: all_gather of the scores (every rank holds them), a rank-0-only `continue` that skips
only printing."""

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
        scores = [torch.zeros(1) for _ in range(world)]
        dist.all_gather(scores, mine)
        if max(s.item() for s in scores) > 0.99:
            break
        if dist.get_rank() != 0:
            continue
        print(epoch, [s.item() for s in scores])
