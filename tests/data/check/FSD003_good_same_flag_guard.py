"""The rank condition lets every rank in under the flag that also guards the collective, in the function called:

- fairseq's trainer: ``if load_on_all_ranks or rank == 0: load_checkpoint_to_cpu(path, load_on_all_ranks)``, whose
  barrier runs only ``if load_on_all_ranks`` (when every rank is in);
- open_clip's evaluate: non-master ranks return early only when FSDP evaluation is off, and the zero-shot helper
  broadcasts only when it is on (the flag computed alike in both functions)."""

import torch
import torch.distributed as dist


def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):
    state = torch.load(path, map_location="cpu")
    if load_on_all_ranks:
        dist.barrier()
    return state


class Trainer:
    def load_checkpoint(self, filename):
        load_on_all_ranks = self.cfg.load_checkpoint_on_all_dp_ranks or self.is_fsdp
        if load_on_all_ranks or dist.get_rank() == 0:
            state = load_checkpoint_to_cpu(filename, load_on_all_ranks=load_on_all_ranks)
            return state
        return None


def run_classifier(model, dataloader, args, use_fsdp_eval=False):
    is_rank0 = dist.get_rank() == 0
    for images, target in dataloader:
        if use_fsdp_eval:
            signal = torch.ones(1)
            dist.broadcast(signal, src=0)
        if is_rank0 or use_fsdp_eval:
            print(model(images).argmax(-1) == target)


def zero_shot_eval(model, data, args):
    use_fsdp_eval = getattr(args, "fsdp", False) and getattr(args, "distributed", False)
    return run_classifier(model, data["imagenet-val"], args, use_fsdp_eval=use_fsdp_eval)


def evaluate(model, data, args):
    use_fsdp_eval = getattr(args, "fsdp", False) and getattr(args, "distributed", False)
    if not use_fsdp_eval and dist.get_rank() != 0:
        return {}
    return zero_shot_eval(model, data, args)
