import argparse

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForSequenceClassification, AutoTokenizer
from datasets import load_dataset


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert-base-uncased")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--eval_steps", type=int, default=200)
    return p.parse_args()


def evaluate(model, loader, accelerator):
    model.eval()
    correct, seen = 0, 0
    for batch in loader:
        with torch.no_grad():
            logits = model(**batch).logits
        preds, refs = accelerator.gather_for_metrics((logits.argmax(-1), batch["labels"]))
        correct += (preds == refs).sum().item()
        seen += refs.numel()
    model.train()
    return correct / seen


def main():
    args = parse_args()
    accelerator = Accelerator()
    tok = AutoTokenizer.from_pretrained(args.model)
    raw = load_dataset("glue", "sst2")

    def encode(ex):
        return tok(ex["sentence"], truncation=True, padding="max_length", max_length=64)

    with accelerator.main_process_first():
        ds = raw.map(encode, batched=True).rename_column("label", "labels")
    ds.set_format("torch", columns=["input_ids", "attention_mask", "labels"])
    train_loader = DataLoader(ds["train"], batch_size=32, shuffle=True)
    eval_loader = DataLoader(ds["validation"], batch_size=64)

    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(
        model, optimizer, train_loader, eval_loader)

    total_steps = args.epochs * len(train_loader)
    progress_bar = tqdm(range(total_steps), disable=not accelerator.is_main_process)
    for epoch in range(args.epochs):
        for batch in train_loader:
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            progress_bar.update(1)
            completed_steps = progress_bar.n
            if completed_steps > 0 and completed_steps % args.eval_steps == 0:
                acc = evaluate(model, eval_loader, accelerator)
                accelerator.print(f"step {completed_steps}: accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
