"""FSD066 near-misses: after an AVG all-reduce, a division by a count computed from the world size (the number of
local validation batches) and a size read from the averaged tensor are not a second average."""
import torch
import torch.distributed as dist


def validate(model, loader, total_tokens, seq_len):
    world_size = dist.get_world_size()
    val_steps = total_tokens // (world_size * seq_len)
    val_loss = torch.zeros(())
    with torch.no_grad():
        for _ in range(val_steps):
            x, y = next(loader)
            val_loss += model(x, y)
    dist.all_reduce(val_loss, op=dist.ReduceOp.AVG)
    val_loss /= val_steps
    return val_loss


def shard_rows(grad, world_size):
    dist.all_reduce(grad, op=dist.ReduceOp.AVG)
    rows = grad.shape[0] // world_size
    return grad[:rows]
