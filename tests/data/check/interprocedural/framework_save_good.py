"""The same helpers with the save made on every rank (the Trainer writes the files from the main process itself);
only the tokenizer, which is not sharded, is saved on the main process."""

from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments


def build_trainer(model, data):
    args = TrainingArguments(output_dir="out", fsdp="full_shard auto_wrap", per_device_train_batch_size=2)
    return Trainer(model=model, args=args, train_dataset=data)


def save_final(trainer, tokenizer, out):
    trainer.save_model(out)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(out)


class Run:
    def __init__(self, trainer):
        self.trainer = trainer

    def finish(self, out):
        self.trainer.save_model(out)


def main(data):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    trainer = build_trainer(model, data)
    trainer.train()
    save_final(trainer, tokenizer, "out/final")
    Run(trainer).finish("out/run")


if __name__ == "__main__":
    main(None)
