# FSD043 fix fixture: every rank loads the checkpoint rank 0 saved, without map_location; `check --fix` passes
# map_location="cpu", and the fixed script checks the loaded model against the saved one.
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if torch.cuda.is_available() else torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        torch.manual_seed(0)
        model = nn.Linear(8, 4).to(device)
        box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        path = os.path.join(box[0], "last.pt")
        if dist.get_rank() == 0:
            torch.save({"model": model.state_dict()}, path)
        dist.barrier()
        fresh = nn.Linear(8, 4).to(device)
        ckpt = torch.load(path, weights_only=True)
        fresh.load_state_dict(ckpt["model"])
        for a, b in zip(model.parameters(), fresh.parameters()):
            assert b.device == device and torch.equal(a, b), "the loaded model differs from the saved one"
        dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
