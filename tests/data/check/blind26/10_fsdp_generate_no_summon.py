import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.models.gpt2.modeling_gpt2 import GPT2Block


class SampleEvaluator:
    def __init__(self, model_name, local_rank):
        self.tokenizer = AutoTokenizer.from_pretrained(model_name)
        self.tokenizer.pad_token = self.tokenizer.eos_token
        base = AutoModelForCausalLM.from_pretrained(model_name)
        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={GPT2Block})
        self.model = FSDP(base, auto_wrap_policy=policy, device_id=local_rank, use_orig_params=True)

    def train_step(self, texts, opt):
        batch = self.tokenizer(texts, return_tensors="pt", padding=True).to("cuda")
        out = self.model(**batch, labels=batch["input_ids"])
        out.loss.backward()
        opt.step()
        opt.zero_grad()
        return out.loss.item()

    @torch.no_grad()
    def sample(self, prompt):
        self.model.eval()
        batch = self.tokenizer([prompt], return_tensors="pt").to("cuda")
        tokens = self.model.generate(**batch, max_new_tokens=32, synced_gpus=True)
        self.model.train()
        return self.tokenizer.decode(tokens[0], skip_special_tokens=True)


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    ev = SampleEvaluator("gpt2", local_rank)
    opt = torch.optim.AdamW(ev.model.parameters(), lr=1e-5)
    for step in range(20):
        loss = ev.train_step(["the quick brown fox", "jumps over the lazy dog"], opt)
        if step % 10 == 0:
            text = ev.sample("Once upon a time")
            if dist.get_rank() == 0:
                print(step, loss, text)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
