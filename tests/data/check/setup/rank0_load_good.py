"""FSD075, the same shapes fixed: sync_module_states=True (also from a flag), every rank loading, a broadcast after
the rank-0 load, and, for fully_shard, the full state dict broadcast from rank 0 after the shard; a loader that
returns the rank-0 load given to a wrap with sync_module_states=True, a loader every rank loads in, or one that
broadcasts before it returns."""
import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from transformers import AutoConfig, AutoModelForCausalLM


def load_pretrained(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))


def build_llm(rank, name, low_cpu):
    if rank == 0:
        model = AutoModelForCausalLM.from_pretrained(name)
    else:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(name))
    return FSDP(
        model,
        param_init_fn=lambda m: m.to_empty(device=torch.cuda.current_device(), recurse=False),
        device_id=torch.cuda.current_device(),
        sync_module_states=low_cpu,
    )


class Trainer:
    def __init__(self, net, is_main):
        if is_main:
            net.encoder.load_state_dict(torch.load("encoder.pt", map_location="cpu"))
        self.model = FSDP(net, sync_module_states=True)


def main(path):
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    net = torch.nn.Linear(8, 8)
    load_pretrained(net, path)
    net = FSDP(net)
    head = torch.nn.Linear(8, 8)
    if rank == 0:
        head.load_state_dict(torch.load(path, map_location="cpu"))
    for p in head.parameters():
        dist.broadcast(p.data, src=0)
    head = FSDP(head)
    block = torch.nn.Linear(8, 8)
    full = torch.load(path, map_location="cpu") if rank == 0 else {}
    fully_shard(block)
    set_model_state_dict(block, full, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))
    build_llm(rank, "gpt2", True)
    Trainer(torch.nn.Transformer(), rank == 0)
    dist.destroy_process_group()


def load_on_rank0(name, rank):
    if rank == 0:
        return AutoModelForCausalLM.from_pretrained(name)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(name))


def load_everywhere(name, rank):
    if rank == 0:
        print("loading", name)
    return AutoModelForCausalLM.from_pretrained(name)


def restore(path, rank):
    net = torch.nn.Linear(8, 8)
    if rank == 0:
        net.load_state_dict(torch.load(path, map_location="cpu"))
    for p in net.parameters():
        dist.broadcast(p.data, src=0)
    return net


def shard(model):
    return FSDP(model, device_id=torch.cuda.current_device(), sync_module_states=True)


def plain_shard(model):
    return FSDP(model, device_id=torch.cuda.current_device())


def run(name, path):
    rank = dist.get_rank()
    shard(load_on_rank0(name, rank))
    plain_shard(load_everywhere(name, rank))
    return FSDP(restore(path, rank))
