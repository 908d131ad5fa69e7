"""The model is loaded on every rank at once; main_process_first() keeps only the tokenizer (and the dataset's
preprocessing), which need no collective."""

from accelerate import Accelerator, DeepSpeedPlugin
from transformers import AutoModelForCausalLM, AutoTokenizer


def setup(name):
    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=3))
    with accelerator.main_process_first():
        tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name)
    return accelerator, tokenizer, model
