"""FSD075: rank 0 loads the pretrained weights, then FSDP1 shards the module without sync_module_states: the
other ranks shard their own random weights and train from them."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    model = torch.nn.Linear(8, 8)
    if rank == 0:
        model.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
    model = FSDP(model, device_id=torch.cuda.current_device())  # <- FSD075
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 8, device="cuda")).sum().backward()
    optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
