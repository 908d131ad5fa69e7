"""Lightning hooks that read ``trainer.log_dir`` on rank 0 only: the property broadcasts the directory from rank 0,
so rank 0 waits in that broadcast for ranks that never read it (the run freezes at the first hook)."""

import json
import os

import lightning.pytorch as pl
from lightning.pytorch.utilities import rank_zero_only


class SaveConfig(pl.Callback):
    def __init__(self, config):
        self.config = config

    def on_train_start(self, trainer, pl_module):
        if trainer.is_global_zero:
            path = os.path.join(trainer.log_dir, "config.json")  # <- FSD054
            with open(path, "w") as f:
                json.dump(self.config, f)


class Model(pl.LightningModule):
    @rank_zero_only
    def on_validation_epoch_end(self):
        out = os.path.join(self.trainer.log_dir, f"epoch{self.current_epoch}.txt")  # <- FSD054
        with open(out, "w") as f:
            f.write("done\n")
