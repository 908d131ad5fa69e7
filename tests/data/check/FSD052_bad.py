# An accelerate evaluation loop (the shape of older examples): gather, not gather_for_metrics, into the metric.
import evaluate
import torch
from accelerate import Accelerator


def main(model, optimizer, train_dataloader, eval_dataloader):
    accelerator = Accelerator()
    model, optimizer, train_dataloader, eval_dataloader = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader
    )
    metric = evaluate.load("accuracy")
    model.eval()
    for step, batch in enumerate(eval_dataloader):
        with torch.no_grad():
            outputs = model(**batch)
        predictions = outputs.logits.argmax(dim=-1)
        predictions, references = accelerator.gather((predictions, batch["labels"]))  # <- FSD052
        metric.add_batch(predictions=predictions, references=references)
    accelerator.print(metric.compute())
