# Right: gather_for_metrics drops the padded duplicates (or the loop trims them itself with samples_seen).
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
        predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
        metric.add_batch(predictions=predictions, references=references)
    samples_seen = 0
    for step, batch in enumerate(eval_dataloader):
        with torch.no_grad():
            outputs = model(**batch)
        predictions, references = accelerator.gather((outputs.logits.argmax(dim=-1), batch["labels"]))
        if step == len(eval_dataloader) - 1:
            predictions = predictions[: len(eval_dataloader.dataset) - samples_seen]
            references = references[: len(eval_dataloader.dataset) - samples_seen]
        else:
            samples_seen += references.shape[0]
        metric.add_batch(predictions=predictions, references=references)
    accelerator.print(metric.compute())
    for batch in train_dataloader:  # training: the gathered loss is only logged
        loss = model(**batch).loss
        accelerator.backward(loss)
        accelerator.print(accelerator.gather(loss.detach()).mean())
