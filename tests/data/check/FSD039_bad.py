"""A Hugging Face Trainer fine-tune with FSDP turned on in TrainingArguments; the final save is made on the main
process only (transformers issues about save_model hanging under FSDP: every rank gathers its shards)."""

from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments


def main():
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    data = load_dataset("imdb", split="train[:1%]")
    args = TrainingArguments(
        output_dir="out",
        per_device_train_batch_size=2,
        fsdp="full_shard auto_wrap",
        fsdp_config={"transformer_layer_cls_to_wrap": ["GPT2Block"]},
    )
    trainer = Trainer(model=model, args=args, train_dataset=data, tokenizer=tokenizer)
    trainer.train()
    if trainer.is_world_process_zero():
        trainer.save_model("out/final")  # <- FSD039
        tokenizer.save_pretrained("out/final")


if __name__ == "__main__":
    main()
