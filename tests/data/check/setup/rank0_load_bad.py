"""FSD075 in the shapes real code takes: the low-CPU-memory recipe (from_pretrained on rank 0, meta elsewhere)
without sync_module_states, a helper that loads into the module it is given on rank 0, a Trainer that loads a part
of the model on the main process, fully_shard after a rank-0 load, and a loader that returns the rank-0 load whose
result a wrapping helper is given (``shard(load_on_rank0(name, rank))``) or its caller binds."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from transformers import AutoConfig, AutoModelForCausalLM


def load_pretrained(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))


def build_llm(rank, name):
    if rank == 0:
        model = AutoModelForCausalLM.from_pretrained(name)
    else:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(name))
    return FSDP(  # <- FSD075
        model,
        param_init_fn=lambda m: m.to_empty(device=torch.cuda.current_device(), recurse=False),
        device_id=torch.cuda.current_device(),
    )


class Trainer:
    def __init__(self, net, is_main):
        if is_main:
            net.encoder.load_state_dict(torch.load("encoder.pt", map_location="cpu"))
        self.model = FSDP(net, sync_module_states=False)  # <- FSD075


def main(path):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    net = torch.nn.Linear(8, 8)
    if rank == 0:
        load_pretrained(net, path)
    net = FSDP(net)  # <- FSD075
    block = torch.nn.Linear(8, 8)
    if dist.get_rank() == 0:
        block.load_state_dict(torch.load(path, map_location="cpu"))
    fully_shard(block)  # <- FSD075
    build_llm(rank, "gpt2")
    Trainer(torch.nn.Transformer(), rank == 0)
    dist.destroy_process_group()


def load_on_rank0(name, rank):
    if rank == 0:
        return AutoModelForCausalLM.from_pretrained(name)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(name))


def shard(model):
    return FSDP(model, device_id=torch.cuda.current_device())  # <- FSD075


def restore(path, rank):
    net = torch.nn.Linear(8, 8)
    if rank == 0:
        net.load_state_dict(torch.load(path, map_location="cpu"))
    return net


def run(name, path):
    rank = dist.get_rank()
    shard(load_on_rank0(name, rank))
    net = restore(path, rank)
    return FSDP(net)  # <- FSD075
