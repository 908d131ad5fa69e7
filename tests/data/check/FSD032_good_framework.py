# Lightning's model-parallel strategy materialises a meta-device model itself (to_empty + reset_parameters)
# after the user's parallelize function has sharded it.
import lightning as L
import torch
import torch.nn as nn
from lightning.fabric.strategies import ModelParallelStrategy
from torch.distributed.fsdp import fully_shard


def parallelize(model, device_mesh):
    for block in model:
        fully_shard(block, mesh=device_mesh)
    fully_shard(model, mesh=device_mesh)
    return model


def main():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 16))
    fabric = L.Fabric(strategy=ModelParallelStrategy(parallelize_fn=parallelize))
    fabric.launch()
    model = fabric.setup(model)


if __name__ == "__main__":
    main()
