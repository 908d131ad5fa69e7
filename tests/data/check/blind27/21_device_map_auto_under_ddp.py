import torch
from accelerate import Accelerator
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoTokenizer, DataCollatorForLanguageModeling, LlamaForCausalLM

MODEL_PATH = "/models/llama-2-7b-hf"


def build_dataloader(tokenizer, batch_size=2):
    raw = load_dataset("json", data_files="train.jsonl", split="train")

    def tok(ex):
        return tokenizer(ex["text"], truncation=True, max_length=1024)

    ds = raw.map(tok, batched=True, remove_columns=raw.column_names)
    collate = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    return DataLoader(ds, batch_size=batch_size, shuffle=True, collate_fn=collate)


def load_model():
    model = LlamaForCausalLM.from_pretrained(
        MODEL_PATH,
        torch_dtype=torch.bfloat16,
        device_map="auto",
    )
    model.gradient_checkpointing_enable()
    return model


def main():
    accelerator = Accelerator(gradient_accumulation_steps=8, mixed_precision="bf16")
    tokenizer = AutoTokenizer.from_pretrained(MODEL_PATH)
    tokenizer.pad_token = tokenizer.eos_token
    model = load_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    loader = build_dataloader(tokenizer)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    model.train()
    for epoch in range(2):
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
        accelerator.print(f"epoch {epoch} done, last loss {loss.item():.4f}")
    accelerator.wait_for_everyone()
    accelerator.unwrap_model(model).save_pretrained("ft-out", is_main_process=accelerator.is_main_process,
                                                    save_function=accelerator.save)


if __name__ == "__main__":
    main()
