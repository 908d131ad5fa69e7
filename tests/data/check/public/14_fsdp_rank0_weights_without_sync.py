# Pattern from https://github.com/pytorch/pytorch/issues/105840 and https://github.com/meta-llama/llama-cookbook/pull/77:
# the low-CPU-memory recipe loads the pretrained model on rank 0 and builds it on the meta device elsewhere; FSDP only
# gives the other ranks rank 0's weights when sync_module_states=True, and without it they train from the
# uninitialised memory their param_init_fn allocated. Our code, details replaced.
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from transformers import AutoConfig, AutoModelForCausalLM


def main(name):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    torch.cuda.set_device(rank % torch.cuda.device_count())
    if rank == 0:
        model = AutoModelForCausalLM.from_pretrained(name)
    else:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(name))
    model = FSDP(  # <- FSD075
        model,
        device_id=torch.cuda.current_device(),
        param_init_fn=lambda m: m.to_empty(device=torch.cuda.current_device(), recurse=False),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    ids = torch.randint(0, 100, (1, 16), device="cuda")
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main("gpt2")
