# Pattern from https://github.com/verl-project/verl/pull/6150 ("fp16 requires ShardedGradScaler"): an FSDP fp16
# run with the plain AMP GradScaler. Our code, details replaced.
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision


def build(module):
    mp = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float32)
    model = FSDP(module, mixed_precision=mp)
    scaler = torch.cuda.amp.GradScaler()  # <- FSD011
    return model, scaler
