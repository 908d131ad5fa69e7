# `rank0` here is a flag every rank passes with the same value ("read only rank 0's metadata"), not a test of
# which rank this is: both branches run on every rank together.
import torch.distributed.checkpoint as dcp


def load_base(state_dict, path, rank0=False):
    if rank0:
        dcp.load(state_dict, checkpoint_id=path)
    else:
        dcp.load(state_dict, checkpoint_id=path, planner=None)
    return state_dict
