# The amp path refuses FSDP before it builds a plain GradScaler; FSDP is used only on the bf16 path.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def setup(args, model):
    scaler = None
    if args.precision == "amp":
        assert not args.fsdp, "FSDP is not supported with amp"
        scaler = torch.amp.GradScaler()
    if args.fsdp:
        model = FSDP(model)
    return model, scaler
