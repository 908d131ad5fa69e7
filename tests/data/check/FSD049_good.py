# Right: each rank loads the whole model onto its own GPU (a device map naming one device), then DDP.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import AutoModelForCausalLM


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    model = AutoModelForCausalLM.from_pretrained("gpt2", device_map={"": local_rank}, torch_dtype=torch.bfloat16)
    model = DDP(model, device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    opt.step()
    # inference on one process may spread a big model over the GPUs: nothing wraps it
    big = AutoModelForCausalLM.from_pretrained("gpt2-xl", device_map="auto")
    print(big.hf_device_map)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
