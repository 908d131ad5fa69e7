"""The same work with the collectives on every rank, only the printing and saving on the main process."""

import lightning.pytorch as pl
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object

accelerator = Accelerator()


def evaluate(model, loader):
    model.eval()
    preds = []
    for batch in loader:
        with torch.no_grad():
            logits = model(**batch).logits
        gathered = accelerator.gather_for_metrics(logits.argmax(-1))
        if accelerator.is_main_process:
            preds.append(gathered)
    return preds


def finish(model, path, texts):
    accelerator.wait_for_everyone()
    everything = gather_object(texts)
    if accelerator.is_main_process:
        print(everything)
        accelerator.save_model(model, path)


def first_then_others():
    if accelerator.is_main_process:
        print("main first")
        accelerator.wait_for_everyone()
    else:
        accelerator.wait_for_everyone()


def mean_of(values):
    return accelerator.gather(values).mean()


def report(values):
    mean = mean_of(values)
    if accelerator.is_main_process:
        print(mean)


class LitClassifier(pl.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.log("val_loss", loss, sync_dist=True)
        if self.trainer.is_global_zero:
            self.log("val_loss_rank0", loss, rank_zero_only=True)
        return loss

    def on_validation_epoch_end(self):
        everything = self.all_gather(torch.tensor(1.0))
        if self.global_rank == 0:
            print(everything)


class SaveCallback(pl.Callback):
    def on_validation_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            print("epoch done")
        trainer.strategy.barrier()


def run(rank, fabric, loader):
    trainers = torch.distributed.new_group(ranks=[1, 2, 3])  # the trainers' own group
    if rank == 0:
        player(loader)  # rank 0 plays, the others train among themselves on a group of their own
    else:
        train(fabric, loader)


def player(loader):
    for batch in loader:
        print(batch)


def train(fabric, loader):
    for batch in loader:
        fabric.backward(batch.sum())
