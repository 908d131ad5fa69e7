"""Under DeepSpeed ZeRO-3 the model is loaded inside main_process_first(): from_pretrained partitions the
parameters with collectives while the other ranks wait in the context's barrier."""

from accelerate import Accelerator, DeepSpeedPlugin
from transformers import AutoModelForCausalLM, AutoTokenizer


def setup(name):
    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=3))
    with accelerator.main_process_first():
        tokenizer = AutoTokenizer.from_pretrained(name)
        model = AutoModelForCausalLM.from_pretrained(name)  # <- FSD090
    return accelerator, tokenizer, model
