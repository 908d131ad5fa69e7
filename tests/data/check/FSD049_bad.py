# A Hugging Face model loaded with device_map="auto", then wrapped in DDP under torchrun.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = AutoModelForCausalLM.from_pretrained("gpt2", device_map="auto", torch_dtype=torch.bfloat16)  # <- FSD049
    model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
