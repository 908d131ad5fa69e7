"""Accelerate's gather of nonzero() indices padded first with pad_across_processes: one shape on every rank."""


def gather_padded(accelerator, scores):
    found = (scores > 0.5).nonzero()
    found = accelerator.pad_across_processes(found, dim=0, pad_index=-1)
    return accelerator.gather(found)
