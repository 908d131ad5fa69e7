"""What is loaded without ``map_location`` holds nothing on a GPU:

- dino's eval_knn.py: features dumped by the same script after ``.cpu()`` (``torch.save(train_features.cpu(),
  os.path.join(args.dump_features, "trainfeat.pth"))``) and loaded back from ``--load_features`` on every rank;
- LLaMA2-Accessory's sample.py / demo.py: ``train_args = torch.load(os.path.join(args.ckpt, "model_args.pth"))``, the
  argparse Namespace the training script saved;
- a dict of numbers the same file saves (``{"epoch": ..., "step": ...}``)."""

import os

import torch
import torch.distributed as dist


def extract_features(model, loader):
    feats = torch.cat([model(x.cuda()) for x, _ in loader])
    labels = torch.cat([y.cuda() for _, y in loader])
    return feats, labels


def main(args, model, loader):
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    if args.load_features:
        train_features = torch.load(os.path.join(args.load_features, "trainfeat.pth"))
        train_labels = torch.load(os.path.join(args.load_features, "trainlabels.pth"))
    else:
        train_features, train_labels = extract_features(model, loader)
    if dist.get_rank() == 0 and args.dump_features:
        torch.save(train_features.cpu(), os.path.join(args.dump_features, "trainfeat.pth"))
        torch.save(train_labels.cpu(), os.path.join(args.dump_features, "trainlabels.pth"))
        torch.save({"epoch": int(args.epoch), "step": 0}, os.path.join(args.dump_features, "progress.pth"))
    progress = torch.load(os.path.join(args.load_features, "progress.pth"))
    train_args = torch.load(os.path.join(args.ckpt, "model_args.pth"))
    print(train_args.__dict__, progress["epoch"])
    dist.destroy_process_group()
    return train_features, train_labels


if __name__ == "__main__":
    main(None, None, None)
