import os
import torch
import torch.nn as nn
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        dist.init_process_group("nccl")
        self.rank = dist.get_rank()
        self.local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(self.local_rank)
        backbone = torchvision.models.resnet50(num_classes=128)
        self.model = DDP(backbone.cuda(), device_ids=[self.local_rank])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=cfg["lr"], momentum=0.9)
        self.cur_epoch = 0
        self.max_eval_score = 0.0
        os.makedirs(cfg["save_dir"], exist_ok=True)

    def _save_checkpoint(self, tag):
        save_path = f"{self.cfg['save_dir']}/checkpoint_{tag}.pth"
        state_dict = {
            "tag": str(tag),
            "epoch": self.cur_epoch,
            "max_eval_score": self.max_eval_score,
            "model": self.model.module.state_dict(),
            "optimizer": self.optimizer.state_dict(),
        }
        torch.save(state_dict, save_path)

    def _train_epoch(self):
        self.model.train()
        for _ in range(200):
            x = torch.randn(32, 3, 224, 224, device="cuda")
            z = self.model(x)
            loss = -nn.functional.cosine_similarity(z[:16], z[16:]).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def _evaluate(self):
        return float(torch.rand(1))

    def train(self):
        for epoch in range(self.cfg["epochs"]):
            self.cur_epoch = epoch
            self._train_epoch()
            score = self._evaluate()
            if score > self.max_eval_score:
                self.max_eval_score = score
                self._save_checkpoint("best")
            if self.rank == 0:
                self._save_checkpoint("last")
        dist.destroy_process_group()


if __name__ == "__main__":
    Trainer({"lr": 0.05, "epochs": 200, "save_dir": "./results"}).train()
