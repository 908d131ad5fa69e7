import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def save(model, step):
    if dist.get_rank() == 0:
        dcp.save({"model": model.state_dict()}, checkpoint_id=f"ckpt/{step}")  # <- FSD004
