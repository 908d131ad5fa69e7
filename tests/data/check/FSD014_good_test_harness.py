# torch's multi-process test harness destroys the process group after each test (destroy_pg_upon_exit).
import torch.distributed as dist
from torch.testing._internal.common_distributed import MultiProcessTestCase


class SyncTest(MultiProcessTestCase):
    def _init(self):
        dist.init_process_group("nccl", world_size=self.world_size, rank=self.rank)


if __name__ == "__main__":
    SyncTest().run()
