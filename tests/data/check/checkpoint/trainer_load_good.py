"""The same Trainer mapping the snapshot onto this rank's GPU; and a class whose loading method nobody calls (a
library helper: its caller decides)."""

import os

import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, snapshot_path):
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to(self.gpu_id)
        self.epochs_run = 0
        if os.path.exists(snapshot_path):
            self._restore(snapshot_path)
        self.model = DDP(self.model, device_ids=[self.gpu_id])

    def _restore(self, path):
        snapshot = torch.load(path, map_location=f"cuda:{self.gpu_id}")
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]


def main():
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    init_process_group(backend="nccl")
    trainer = Trainer(torch.nn.Linear(8, 1), "snapshot.pt")
    destroy_process_group()
    return trainer


if __name__ == "__main__":
    main()


class Exporter:
    def __init__(self, path):
        self.path = path

    def _read(self):
        return torch.load(self.path)
