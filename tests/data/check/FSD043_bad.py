# Every rank resumes from the file rank 0 saved from cuda:0: without map_location each rank's copy lands on GPU 0.
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, path):
        self.model = model
        self.path = path

    def resume(self):
        state = torch.load(self.path, weights_only=True)  # <- FSD043
        self.model.module.load_state_dict(state["model"])
        return state["step"]


def load_pretrained(model, path):
    model.load_state_dict(torch.load(path))  # <- FSD043


def eval_worker(rank, world_size):  # every spawned process's main: each loads rank 0's file
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = torch.nn.Linear(8, 8).cuda(rank)
    model.load_state_dict(torch.load("best.pt"))  # <- FSD043
    dist.destroy_process_group()


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)  # does not change where torch.load restores a cuda:0 tensor
    model = torch.nn.Linear(8, 8).cuda()
    load_pretrained(model, "init.pt")
    ddp = DDP(model, device_ids=[local_rank])
    trainer = Trainer(ddp, "last.pt")
    if os.path.exists("last.pt"):
        trainer.resume()
    if dist.get_rank() != 0:
        extra = torch.load("extra.pt")  # <- FSD043
        del extra
    if local_rank not in [-1, 0]:
        other = torch.load("other.pt")  # <- FSD043
        del other
    dist.destroy_process_group()
    mp.spawn(eval_worker, nprocs=torch.cuda.device_count(), args=(torch.cuda.device_count(),))


if __name__ == "__main__":
    main()
