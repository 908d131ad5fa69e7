# Right: load the full state dict before sharding, or after it with set_model_state_dict(full_state_dict=True).
import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.fsdp import fully_shard


def load_then_shard():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    model.load_state_dict(torch.load("pretrained.pt", map_location="cpu", weights_only=True))
    fully_shard(model)
    return model


def shard_then_broadcast():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    fully_shard(model)
    full = torch.load("pretrained.pt", map_location="cpu", weights_only=True) if dist.get_rank() == 0 else {}
    set_model_state_dict(model, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    return model


def main():
    dist.init_process_group("gloo")
    models = [load_then_shard(), shard_then_broadcast()]
    print(len(models))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
