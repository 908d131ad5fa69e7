"""The same hooks done right: every rank reads ``trainer.log_dir`` (the broadcast), only rank 0 writes."""

import json
import os

import lightning.pytorch as pl


class SaveConfig(pl.Callback):
    def __init__(self, config):
        self.config = config

    def on_train_start(self, trainer, pl_module):
        path = os.path.join(trainer.log_dir, "config.json")
        if trainer.is_global_zero:
            with open(path, "w") as f:
                json.dump(self.config, f)


class Model(pl.LightningModule):
    def on_validation_epoch_end(self):
        log_dir = self.trainer.log_dir
        if self.trainer.is_global_zero:
            with open(os.path.join(log_dir, f"epoch{self.current_epoch}.txt"), "w") as f:
                f.write("done\n")
