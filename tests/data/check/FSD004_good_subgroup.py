# Hybrid sharding: only the first replica writes, and dcp.save is given that replica's process group, so
# every rank of the group it runs on takes part.
import torch.distributed.checkpoint as dcp


def save(state_dict, mesh, path):
    if mesh.get_local_rank(mesh_dim=0) == 0:
        dcp.save(state_dict, checkpoint_id=path, process_group=mesh.get_group(1))
