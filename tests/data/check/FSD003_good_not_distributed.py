# local_rank == -1 means "not launched distributed": no rank of a distributed job runs that branch, so the
# barrier reached through evaluate() (itself guarded by `not in [-1, 0]`) never runs on part of a job.
import torch.distributed as dist


def load_examples(args, evaluate=False):
    if args.local_rank not in [-1, 0] and not evaluate:
        dist.barrier()  # the first process builds the cache, the others wait
    features = []
    if args.local_rank == 0 and not evaluate:
        dist.barrier()  # and releases them
    return features


def evaluate(args):
    return load_examples(args, evaluate=True)


def train(args):
    if args.local_rank in [-1, 0] and args.logging_steps > 0:
        if args.local_rank == -1 and args.evaluate_during_training:
            evaluate(args)
