# FSDP2 + DCP: save a sharded state dict with torch.distributed.checkpoint and load it back.
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
from torch.distributed.fsdp import fully_shard


def main() -> None:
    world = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    try:
        device = torch.device("cuda" if use_cuda else "cpu")
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 8).to(device)
        fully_shard(model)
        path = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(path)
        dcp.save(get_model_state_dict(model), checkpoint_id=path[0])
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        state = get_model_state_dict(model)
        dcp.load(state, checkpoint_id=path[0])
        set_model_state_dict(model, state)
        assert any(p.full_tensor().abs().sum() > 0 for p in model.parameters())
        dist.barrier()
        if dist.get_rank() == 0:
            shutil.rmtree(path[0])
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
