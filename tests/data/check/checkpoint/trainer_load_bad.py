"""A Trainer that resumes from a snapshot in a method its __init__ calls; the class is built on every rank of an
NCCL job, and torch.load keeps the saved device (cuda:0) for every rank."""

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
        snapshot = torch.load(path)  # <- FSD043
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
