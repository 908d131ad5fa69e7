"""``--local_rank`` declared only for torch 1.x, whose ``torch.distributed.launch`` passes it (Swin-Transformer's
main_simmim_pt.py / main_simmim_ft.py); from torch 2.0 the script declares no flag and its config reads the local rank
from the environment (another file, not seen here)."""

import argparse

import torch
import torch.distributed as dist

PYTORCH_MAJOR_VERSION = int(torch.__version__.split(".")[0])


def parse_option():
    parser = argparse.ArgumentParser("SimMIM fine-tuning script", add_help=False)
    parser.add_argument("--cfg", type=str, required=True, metavar="FILE", help="path to config file")
    parser.add_argument("--batch-size", type=int, help="batch size for single GPU")
    # for pytorch >= 2.0, use os.environ['LOCAL_RANK'] instead
    if PYTORCH_MAJOR_VERSION == 1:
        parser.add_argument("--local_rank", type=int, required=True, help="local rank for DistributedDataParallel")
    args = parser.parse_args()
    return args


def main(config):
    model = torch.nn.Linear(4, 4).cuda()
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[config.LOCAL_RANK])
    return model


if __name__ == "__main__":
    args = parse_option()
    torch.cuda.set_device(args.gpu)
    dist.init_process_group(backend="nccl", init_method="env://")
    main(args)
    dist.destroy_process_group()
