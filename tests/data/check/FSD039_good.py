"""The same fine-tune saving on every rank (Trainer writes the files from the main process itself), and a plain
DDP Trainer (no FSDP in the file) whose rank-0 save_model runs no collective."""

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


def fsdp_run(data):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    args = TrainingArguments(output_dir="out", fsdp="full_shard auto_wrap")
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    trainer.save_model("out/final")  # every rank: the shards are gathered, rank 0 writes
    if trainer.is_world_process_zero():
        print("saved")
