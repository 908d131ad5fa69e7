# FSDP2 fine-tuning that shards the model, then loads the pretrained full state dict into it.
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def main():
    dist.init_process_group("gloo")
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    model.load_state_dict(torch.load("pretrained.pt", map_location="cpu", weights_only=True))  # <- FSD053
    opt = torch.optim.AdamW(model.parameters())
    opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
