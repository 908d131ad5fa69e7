# A Hugging Face encoder checkpointed the reentrant way, put inside a task model that DDP wraps with
# find_unused_parameters=True (CodeBERT-style MLM fine-tuning).
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from transformers import RobertaConfig, RobertaModel


class MLMModel(torch.nn.Module):
    def __init__(self, encoder, config):
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, ids):
        return self.head(self.encoder(ids).last_hidden_state)


def build(local_rank):
    config = RobertaConfig(num_hidden_layers=4)
    encoder = RobertaModel(config, add_pooling_layer=False)
    encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model = MLMModel(encoder, config).to(local_rank)
    return DDP(model, device_ids=[local_rank], find_unused_parameters=True)


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    try:
        model = build(local_rank)
        model(torch.randint(2, 1000, (4, 32), device="cuda")).sum().backward()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
