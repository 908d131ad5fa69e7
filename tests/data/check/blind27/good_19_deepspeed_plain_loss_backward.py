import argparse

import deepspeed
import torch
import torch.nn as nn


class SegNet(nn.Module):
    def __init__(self, n_classes=21):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose2d(128, 64, 2, stride=2), nn.ReLU(),
                                 nn.Conv2d(64, n_classes, 1))

    def forward(self, x):
        return self.dec(self.enc(x))


DS_CONFIG = {
    "train_batch_size": 64,
    "train_micro_batch_size_per_gpu": 8,
    "optimizer": {"type": "Adam", "params": {"lr": 1e-4}},
    "gradient_clipping": 1.0,
}


class Trainer:
    def __init__(self, args):
        net = SegNet()
        self.engine, self.optimizer, _, _ = deepspeed.initialize(
            args=args, model=net, model_parameters=net.parameters(), config=DS_CONFIG)
        self.criterion = nn.CrossEntropyLoss(ignore_index=255)

    def train_step(self, images, masks):
        images = images.to(self.engine.device)
        masks = masks.to(self.engine.device)
        logits = self.engine(images)
        loss = self.criterion(logits, masks)
        self.engine.backward(loss)
        self.engine.step()
        return loss.item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--local_rank", type=int, default=-1)
    p = deepspeed.add_config_arguments(p)
    args = p.parse_args()
    deepspeed.init_distributed()
    trainer = Trainer(args)
    for step in range(20_000):
        images = torch.randn(8, 3, 256, 256)
        masks = torch.randint(0, 21, (8, 256, 256))
        loss = trainer.train_step(images, masks)
        if trainer.engine.global_rank == 0 and step % 100 == 0:
            print(f"step {step}: {loss:.4f}")


if __name__ == "__main__":
    main()
