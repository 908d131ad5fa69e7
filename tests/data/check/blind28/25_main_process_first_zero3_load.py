import torch
from accelerate import Accelerator, DeepSpeedPlugin
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling


MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def build_dataset(tokenizer, accelerator):
    with accelerator.main_process_first():
        raw = load_dataset("wikitext", "wikitext-2-raw-v1", split="train")
        tokenized = raw.map(
            lambda b: tokenizer(b["text"], truncation=True, max_length=512),
            batched=True, remove_columns=["text"],
        )
    return tokenized.filter(lambda ex: len(ex["input_ids"]) > 8)


def setup_model(accelerator):
    with accelerator.main_process_first():
        model = AutoModelForCausalLM.from_pretrained(MODEL, torch_dtype=torch.bfloat16)
    model.gradient_checkpointing_enable()
    return model


def main():
    accelerator = Accelerator(
        mixed_precision="bf16",
        deepspeed_plugin=DeepSpeedPlugin(zero_stage=3, gradient_accumulation_steps=4),
    )
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    dataset = build_dataset(tokenizer, accelerator)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    loader = DataLoader(dataset, batch_size=4, shuffle=True, collate_fn=collator)
    model = setup_model(accelerator)
    print(f"Model loaded on {accelerator.device}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    model.train()
    for step, batch in enumerate(loader):
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        if step % 50 == 0:
            accelerator.print(step, loss.item())
    accelerator.wait_for_everyone()
    accelerator.save_state("ckpt")


if __name__ == "__main__":
    main()
