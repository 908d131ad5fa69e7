import argparse
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from transformers import RobertaConfig, RobertaModel


class Model(nn.Module):
    def __init__(self, encoder, config, args):
        super().__init__()
        self.encoder = encoder
        self.config = config
        self.args = args
        self.mlm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, input_ids, labels=None):
        hidden = self.encoder(input_ids, attention_mask=input_ids.ne(1)).last_hidden_state
        logits = self.mlm_head(hidden)
        if labels is None:
            return logits
        return nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)


def train(args, model, dataset):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.train_batch_size, sampler=sampler)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    model.train()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (ids, labels) in enumerate(loader):
            ids, labels = ids.to(args.device), labels.to(args.device)
            loss = model(ids, labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
            if args.local_rank == 0 and step % 100 == 0:
                print(epoch, step, loss.item())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--train_batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    dist.init_process_group("nccl")
    torch.cuda.set_device(args.local_rank)
    args.device = torch.device("cuda", args.local_rank)

    config = RobertaConfig(vocab_size=50265, num_hidden_layers=12)
    encoder = RobertaModel(config, add_pooling_layer=False)
    encoder.gradient_checkpointing_enable()
    model = Model(encoder, config, args).to(args.device)
    model = DDP(model, device_ids=[args.local_rank], find_unused_parameters=True)

    ids = torch.randint(2, 50265, (20000, 256))
    labels = torch.where(torch.rand(ids.shape) < 0.15, ids, torch.full_like(ids, -100))
    train(args, model, TensorDataset(ids, labels))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
