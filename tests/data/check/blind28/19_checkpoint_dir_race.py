import os
import json
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP


def save_checkpoint(checkpoint_dir, step, model_data, optimizer_data, meta_data, rank):
    if rank == 0:
        os.makedirs(checkpoint_dir, exist_ok=True)
        torch.save(model_data, os.path.join(checkpoint_dir, f"model_{step:06d}.pt"))
        with open(os.path.join(checkpoint_dir, f"meta_{step:06d}.json"), "w") as f:
            json.dump(meta_data, f)
    optimizer_path = os.path.join(checkpoint_dir, f"optim_{step:06d}_rank{rank:d}.pt")
    torch.save(optimizer_data, optimizer_path)


def build_model(depth=12, d=768, vocab=65536):
    layers = [nn.Embedding(vocab, d)]
    for _ in range(depth):
        layers.append(nn.TransformerEncoderLayer(d, 12, 4 * d, batch_first=True, norm_first=True))
    layers.append(nn.Linear(d, vocab, bias=False))
    return nn.Sequential(*layers)


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(build_model().cuda(), device_ids=[local_rank])
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=3e-4)
    checkpoint_dir = os.path.expanduser("~/.cache/nanochat/base_checkpoints/d12")
    num_iterations = 5000

    for step in range(num_iterations + 1):
        ids = torch.randint(0, 65536, (8, 1024), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids[:, :-1])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step == num_iterations:
            save_checkpoint(
                checkpoint_dir, step,
                model.module.state_dict(),
                optimizer.optim.state_dict(),
                {"step": step, "val_bpb": loss.item()},
                rank,
            )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
