import argparse
import os

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling,
                          Trainer, TrainingArguments)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    p.add_argument("--data", default="train.jsonl")
    p.add_argument("--output_dir", default="lora-out")
    p.add_argument("--strategy", choices=["ddp", "fsdp"], default="fsdp")
    return p.parse_args()


def build_dataset(tokenizer, path):
    ds = load_dataset("json", data_files=path, split="train")
    return ds.map(lambda ex: tokenizer(ex["text"], truncation=True, max_length=512),
                  batched=True, remove_columns=ds.column_names)


def main():
    args = parse_args()
    is_main = int(os.environ.get("RANK", "0")) == 0
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(args.model, torch_dtype=torch.bfloat16)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj"],
                                             task_type="CAUSAL_LM"))

    fsdp_kwargs = {}
    if args.strategy == "fsdp":
        fsdp_kwargs = dict(fsdp="full_shard auto_wrap",
                           fsdp_config={"transformer_layer_cls_to_wrap": ["LlamaDecoderLayer"],
                                        "use_orig_params": True})
    training_args = TrainingArguments(
        output_dir=args.output_dir,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=4,
        num_train_epochs=2,
        learning_rate=2e-4,
        bf16=True,
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        **fsdp_kwargs,
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=build_dataset(tokenizer, args.data),
        data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
    )
    trainer.train()

    if is_main:
        trainer.save_model(args.output_dir)
        tokenizer.save_pretrained(args.output_dir)
        print(f"saved adapter to {args.output_dir}")


if __name__ == "__main__":
    main()
