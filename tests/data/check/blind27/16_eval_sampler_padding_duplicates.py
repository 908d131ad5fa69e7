import os

import torch
import torch.distributed as dist
import torchvision
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def load_data(root):
    tf_train = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor()])
    tf_eval = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor()])
    dataset = torchvision.datasets.ImageFolder(os.path.join(root, "train"), tf_train)
    dataset_test = torchvision.datasets.ImageFolder(os.path.join(root, "val"), tf_eval)
    train_sampler = DistributedSampler(dataset)
    test_sampler = DistributedSampler(dataset_test)
    return dataset, dataset_test, train_sampler, test_sampler


def evaluate(model, loader, device):
    model.eval()
    correct = torch.zeros(2, device=device)
    with torch.inference_mode():
        for image, target in loader:
            image, target = image.to(device, non_blocking=True), target.to(device, non_blocking=True)
            pred = model(image).argmax(1)
            correct[0] += (pred == target).sum()
            correct[1] += target.numel()
    dist.all_reduce(correct)
    acc1 = (correct[0] / correct[1]).item() * 100
    if dist.get_rank() == 0:
        print(f"Acc@1 {acc1:.3f} over {int(correct[1])} images")
    return acc1


def main(root="/data/imagenet", epochs=90):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dataset, dataset_test, train_sampler, test_sampler = load_data(root)
    train_loader = DataLoader(dataset, batch_size=64, sampler=train_sampler, num_workers=8)
    test_loader = DataLoader(dataset_test, batch_size=64, sampler=test_sampler, num_workers=8)
    model = DDP(torchvision.models.resnet50().to(device), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    for epoch in range(epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        for image, target in train_loader:
            loss = torch.nn.functional.cross_entropy(model(image.to(device)), target.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        evaluate(model, test_loader, device)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
