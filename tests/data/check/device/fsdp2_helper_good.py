"""The torchtitan-style script, right: resume through set_model_state_dict with a full state dict broadcast from
rank 0 (and each rank's own shard file read back with a plain load_state_dict)."""

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
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
        full = torch.load(path, map_location="cpu", weights_only=True)["model"] if dist.get_rank() == 0 else {}
        opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        set_model_state_dict(self.model, full, options=opts)

    def resume_own_shard(self, directory):
        rank = dist.get_rank()
        self.model.load_state_dict(torch.load(f"{directory}/model_rank{rank}.pt", weights_only=False))


def main():
    dist.init_process_group("gloo")
    try:
        Trainer(torch.nn.Module()).resume("consolidated.pt")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
