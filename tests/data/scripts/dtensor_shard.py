# DTensor: shard a tensor over a 1-D device mesh and check the local shards and the full tensor.
import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor


def main() -> None:
    world = int(os.environ["WORLD_SIZE"])
    use_cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    device_type = "cuda" if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    mesh = init_device_mesh(device_type, (world,))
    try:
        full = torch.arange(4 * world, dtype=torch.float32, device=device_type).reshape(2 * world, 2)
        dt = distribute_tensor(full, mesh, [Shard(0)])
        assert dt.to_local().shape == (2, 2)
        assert torch.equal(dt.full_tensor(), full)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
