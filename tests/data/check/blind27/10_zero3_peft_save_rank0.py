import argparse
import os

import deepspeed
import torch
import torch.distributed as dist
from peft import PromptTuningConfig, PromptTuningInit, TaskType, get_peft_model
from transformers import AutoModelForCausalLM


DS_CONFIG = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "bf16": {"enabled": True},
    "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True},
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-2}},
}


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--base_model", default="meta-llama/Llama-2-7b-hf")
    p.add_argument("--output_dir", default="prompt_tuned")
    p.add_argument("--save_every", type=int, default=200)
    p.add_argument("--max_steps", type=int, default=2000)
    p.add_argument("--local_rank", type=int, default=-1)
    return p.parse_args()


def build_model(base):
    model = AutoModelForCausalLM.from_pretrained(base, torch_dtype=torch.bfloat16)
    cfg = PromptTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=20,
                             prompt_tuning_init=PromptTuningInit.RANDOM)
    return get_peft_model(model, cfg)


def batches(device, vocab=32000):
    while True:
        ids = torch.randint(0, vocab, (2, 256), device=device)
        yield {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids}


def save_adapter(engine, output_dir, step):
    path = os.path.join(output_dir, f"step-{step}")
    if dist.get_rank() == 0:
        engine.module.save_pretrained(path)
    dist.barrier()


def main():
    args = parse_args()
    deepspeed.init_distributed()
    model = build_model(args.base_model)
    trainable = [p for p in model.parameters() if p.requires_grad]
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=trainable, config=DS_CONFIG)
    data = batches(engine.device)
    for step in range(1, args.max_steps + 1):
        out = engine(**next(data))
        engine.backward(out.loss)
        engine.step()
        if step % args.save_every == 0:
            save_adapter(engine, args.output_dir, step)


if __name__ == "__main__":
    main()
