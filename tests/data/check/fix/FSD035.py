# FSD035 fix fixture: a DistributedSampler loader iterated over epochs without set_epoch; `check --fix` calls
# sampler.set_epoch(epoch) first in the epoch loop, and the fixed script checks that the epochs' orders differ.
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("gloo")
    try:
        data = list(range(64))
        sampler = DistributedSampler(data, shuffle=True, seed=0)
        loader = DataLoader(data, sampler=sampler, batch_size=32)
        orders = []
        for epoch in range(2):
            # one epoch
            seen = []
            for batch in loader:
                seen += batch.tolist()
            orders.append(seen)
        assert orders[0] != orders[1], "both epochs saw the same order"
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
