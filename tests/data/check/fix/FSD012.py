# FSD012 fix fixture: torch.nn.utils.clip_grad_norm_ on an FSDP1 model's parameters (each rank clips by its own
# shard's norm); `check --fix` calls the FSDP1 method, and the fixed script checks the norm against the unsharded one.
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


def main():
    dist.init_process_group("gloo")
    try:
        torch.manual_seed(0)
        ref = nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 4))
        torch.manual_seed(0)
        model = FSDP(nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 4)), device_id=torch.device("cpu"), use_orig_params=True)
        x = torch.ones(4, 8)
        ref(x).sum().backward()
        model(x).sum().backward()  # the same batch on every rank: the averaged gradient equals ref's
        expected = torch.nn.utils.clip_grad_norm_(ref.parameters(), 1e9)
        total = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)  # clip at 1e9: only the norm is compared
        err = (total - expected).abs().item()
        assert err <= 1e-5, f"total norm {total.item()} vs unsharded {expected.item()} (tol 1e-5)"
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
