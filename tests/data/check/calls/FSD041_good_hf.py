"""The same saves on the global main process."""

from accelerate import Accelerator


def main(model, tokenizer, args, trainer):
    accelerator = Accelerator()
    model = accelerator.prepare(model)
    if accelerator.is_main_process:
        accelerator.unwrap_model(model).save_pretrained(args.output_dir)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(args.output_dir)
