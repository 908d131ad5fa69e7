"""The trainer enters accumulate per batch inside the loop; the loads run on every rank, and an accumulate
context around a loop over micro-batches that runs no backward (a metric pass) is not judged; with
zero3_init_flag=False the model is not built inside zero.Init."""

from accelerate import DeepSpeedPlugin
from peft import PeftModel
from transformers import AutoModelForSeq2SeqLM

PLUGIN = DeepSpeedPlugin(zero_stage=3, zero3_init_flag=False)


class Trainer:
    def __init__(self, accelerator, model, optimizer, loader):
        self.accelerator, self.model, self.optimizer, self.loader = accelerator, model, optimizer, loader
        self.steps = len(loader)

    def epoch(self):
        it = iter(self.loader)
        for _ in range(self.steps):
            batch = next(it)
            with self.accelerator.accumulate(self.model):
                self.accelerator.backward(self.model(**batch).loss)
                self.optimizer.step()

    def score(self, batches):
        with self.accelerator.accumulate(self.model):
            return [self.model(**b).loss.item() for b in batches]


def load(training_args, name, adapter):
    with training_args.main_process_first(desc="load"):
        base = AutoModelForSeq2SeqLM.from_pretrained(name)
        return PeftModel.from_pretrained(base, adapter)
