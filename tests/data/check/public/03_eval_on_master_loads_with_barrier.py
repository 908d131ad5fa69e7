# Pattern from https://github.com/huggingface/transformers/pull/1081: evaluation only on the master process
# (local_rank in [-1, 0]) reaches a data-loading helper that holds a barrier. Our code, details replaced.
import torch


def load_examples(args, evaluate=False):
    if args.local_rank not in [-1, 0]:
        torch.distributed.barrier()
    data = torch.randn(16, 4)
    if args.local_rank == 0:
        torch.distributed.barrier()
    return data


def main(args, model):
    if args.do_eval and args.local_rank in [-1, 0]:
        data = load_examples(args, evaluate=True)  # <- FSD003
        print(model(data).mean())
