import os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from monai.data import DistributedSampler
from monai.metrics import DiceMetric
from monai.networks.nets import UNet


class Evaluator:
    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.dice_metric = DiceMetric(include_background=False, reduction="mean")

    @torch.no_grad()
    def run(self, loader, local_rank):
        self.model.eval()
        self.dice_metric.reset()
        for i, (img, seg) in enumerate(loader):
            img, seg = img.to(self.device), seg.to(self.device)
            logits = self.model(img)
            pred = (logits.sigmoid() > 0.5).float()
            d = self.dice_metric(y_pred=pred, y=seg)
            current = self.dice_metric.aggregate().item()
            print(local_rank, "iter", i, "dice", d.mean().item(), current)
        final = self.dice_metric.aggregate().item()
        self.model.train()
        return final


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    model = UNet(spatial_dims=3, in_channels=1, out_channels=1, channels=(16, 32, 64), strides=(2, 2)).to(device)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])

    n_val = 37
    imgs = torch.randn(n_val, 1, 64, 64, 64)
    segs = (torch.rand(n_val, 1, 64, 64, 64) > 0.7).float()
    val_ds = TensorDataset(imgs, segs)
    sampler = DistributedSampler(val_ds, shuffle=False, even_divisible=False)
    loader = DataLoader(val_ds, batch_size=1, sampler=sampler)

    evaluator = Evaluator(model, device)
    dice = evaluator.run(loader, local_rank)
    if dist.get_rank() == 0:
        print("mean dice", dice)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
