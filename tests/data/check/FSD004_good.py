import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def save(model, step):
    dcp.save({"model": model.state_dict()}, checkpoint_id=f"ckpt/{step}")
    if dist.get_rank() == 0:
        sd = {"model": model.state_dict()}
        dcp.load(sd, checkpoint_id=f"ckpt/{step}", no_dist=True)  # one process, no collective
