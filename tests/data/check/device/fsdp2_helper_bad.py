"""A torchtitan-style script: an apply_fsdp(model) helper shards the model, the Trainer then resumes it from a
consolidated checkpoint with a plain load_state_dict."""

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def apply_fsdp(model):
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.layers:
        fully_shard(block, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    return model


class Trainer:
    def __init__(self, model):
        self.model = apply_fsdp(model)
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def resume(self, path):
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        self.model.load_state_dict(ckpt["model"])  # <- FSD053
        self.optimizer.load_state_dict(ckpt["optimizer"])


def main():
    dist.init_process_group("gloo")
    try:
        Trainer(torch.nn.Module()).resume("consolidated.pt")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
