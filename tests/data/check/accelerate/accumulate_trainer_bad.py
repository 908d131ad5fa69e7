"""A trainer class keeping the Accelerator in self.accelerator, the accumulate context around a loop over the
loader's iterator; and a ZeRO-3 config dict with a PEFT model loaded under training_args.main_process_first()."""

from peft import PeftModel
from transformers import AutoModelForSeq2SeqLM

DS_CONFIG = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 4}


class Trainer:
    def __init__(self, accelerator, model, optimizer, loader):
        self.accelerator, self.model, self.optimizer, self.loader = accelerator, model, optimizer, loader
        self.steps = len(loader)

    def epoch(self):
        it = iter(self.loader)
        with self.accelerator.accumulate(self.model):  # <- FSD089
            for _ in range(self.steps):
                batch = next(it)
                self.accelerator.backward(self.model(**batch).loss)
                self.optimizer.step()


def load(training_args, name, adapter):
    with training_args.main_process_first(desc="load"):
        base = AutoModelForSeq2SeqLM.from_pretrained(name)  # <- FSD090
        return PeftModel.from_pretrained(base, adapter)  # <- FSD090
