# Passes under `torchrun --standalone --nproc_per_node=2 allreduce_env.py`: checks torchrun's worker
# environment and that the script runs as __main__, then sums a tensor across ranks.
import os
import sys

import torch
import torch.distributed as dist

REQUIRED = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
)


def main() -> None:
    missing = [k for k in REQUIRED if k not in os.environ]
    assert not missing, f"missing torchrun variables: {missing}"
    assert os.path.basename(sys.argv[0]) == "allreduce_env.py", sys.argv
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= int(os.environ["WORLD_SIZE"])
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    try:
        device = torch.device("cuda" if use_cuda else "cpu")
        t = torch.ones(2, device=device) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        expected = sum(range(1, dist.get_world_size() + 1))
        assert t.tolist() == [expected, expected], t
        print(f"rank {dist.get_rank()} sum {t.tolist()}")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
