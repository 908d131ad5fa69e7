"""Framework collectives on the main process only: an accelerate evaluation loop, a Lightning module and a callback."""

import lightning.pytorch as pl
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object
from lightning.pytorch.utilities import rank_zero_only

accelerator = Accelerator()


def evaluate(model, loader):
    model.eval()
    preds = []
    for batch in loader:
        with torch.no_grad():
            logits = model(**batch).logits
        if accelerator.is_main_process:
            preds.append(accelerator.gather_for_metrics(logits.argmax(-1)))  # <- FSD054
    return preds


def finish(model, path, texts):
    if accelerator.is_local_main_process:
        accelerator.wait_for_everyone()  # <- FSD054
        print(gather_object(texts))  # <- FSD054
        accelerator.save_model(model, path)


def sync_and_log(values):
    everything = accelerator.gather(values)
    print(everything.mean())


def report(values):
    if accelerator.is_main_process:
        sync_and_log(values)  # <- FSD054


class LitClassifier(pl.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        if self.trainer.is_global_zero:
            self.log("val_loss", loss, sync_dist=True)  # <- FSD054
        return loss

    def on_validation_epoch_end(self):
        if self.global_rank == 0:
            everything = self.all_gather(torch.tensor(1.0))  # <- FSD054
            print(everything)


class SaveCallback(pl.Callback):
    @rank_zero_only
    def on_train_epoch_end(self, trainer, pl_module):
        trainer.strategy.barrier()  # <- FSD054

    def on_validation_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            print("epoch done")
            trainer.strategy.broadcast("last.ckpt")  # <- FSD054
