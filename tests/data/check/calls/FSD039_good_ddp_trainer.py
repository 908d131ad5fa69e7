"""A DDP Trainer (nothing in the file turns FSDP on): save_model on the main process only runs no collective."""

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def main(data):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", fsdp=""), train_dataset=data)
    trainer.train()
    if trainer.is_world_process_zero():
        trainer.save_model("out/final")
