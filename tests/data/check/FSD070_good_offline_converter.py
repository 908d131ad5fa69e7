"""FSD070 near-miss: an offline converter (a DCP checkpoint to one torch.save file) run as a single process: it calls
torch.distributed.checkpoint with no_dist=True and forms no process group, so there are no other ranks to collide."""
import argparse

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict


def dcp_to_file(src, dst):
    state = {}
    _load_state_dict(state, storage_reader=FileSystemReader(src), no_dist=True)
    torch.save(state, dst)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("src")
    parser.add_argument("dst")
    args = parser.parse_args()
    dcp_to_file(args.src, args.dst)


class Coordinator:
    """A reader in the same file broadcasts (a collective), as torch's own converter module does: still no ranks here."""

    def read(self, tensor):
        import torch.distributed as dist

        dist.broadcast(tensor, src=0)
        return tensor
