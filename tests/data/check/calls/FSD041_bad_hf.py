"""Hugging Face shapes: an accelerate loop saving on the local main process, and a script that saves under
training_args.local_rank == 0 (older run_*.py shapes)."""

from accelerate import Accelerator


def main(model, tokenizer, args, training_args):
    accelerator = Accelerator()
    model = accelerator.prepare(model)
    if accelerator.is_local_main_process:
        accelerator.unwrap_model(model).save_pretrained(args.output_dir)  # <- FSD041
    if training_args.local_rank == 0:
        tokenizer.save_pretrained(training_args.output_dir)  # <- FSD041
