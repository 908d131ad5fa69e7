"""A Hugging Face Trainer with FSDP built in a helper and saved on the main process only, in a helper function and
in a method of a class keeping the trainer in self.trainer: under FSDP save_model gathers every rank's shards, so
the other ranks never join (transformers issues on save_model hanging with FSDP)."""

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def build_trainer(model, data):
    args = TrainingArguments(output_dir="out", fsdp="full_shard auto_wrap", per_device_train_batch_size=2)
    return Trainer(model=model, args=args, train_dataset=data)


def save_final(trainer, out):
    if trainer.is_world_process_zero():
        trainer.save_model(out)  # <- FSD039


def export(trainer, out):
    trainer.save_model(out)


class Run:
    def __init__(self, trainer):
        self.trainer = trainer

    def finish(self, out):
        if self.trainer.is_world_process_zero():
            self.trainer.save_model(out)  # <- FSD039


def main(data):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    trainer = build_trainer(model, data)
    trainer.train()
    save_final(trainer, "out/final")
    if trainer.is_world_process_zero():
        export(trainer, "out/export")  # <- FSD039
    Run(trainer).finish("out/run")


if __name__ == "__main__":
    main(None)
