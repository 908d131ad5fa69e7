"""FSD069 near-miss: the DDP wrapper's state dict saved, and the `module.` prefix stripped with torch's helper before
the bare model loads it (the shape of the DDP examples that resume into an unwrapped model)."""
import torch
import torch.distributed as dist
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
from torch.nn.parallel import DistributedDataParallel as DDP


def main(path):
    dist.init_process_group("gloo")
    model = torch.nn.Linear(4, 4)
    ddp = DDP(model)
    if dist.get_rank() == 0:
        torch.save(ddp.state_dict(), path)
    dist.barrier()
    sd = torch.load(path, map_location="cpu")
    consume_prefix_in_state_dict_if_present(sd, "module.")
    model.load_state_dict(sd)
    fresh = torch.nn.Linear(4, 4)
    state = {k.replace("module.", "", 1): v for k, v in torch.load(path, map_location="cpu").items()}
    fresh.load_state_dict(state)
    dist.destroy_process_group()
