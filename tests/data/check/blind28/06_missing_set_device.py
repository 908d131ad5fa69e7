import os
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group


def ddp_setup():
    init_process_group(backend="nccl")


class CharDataset(Dataset):
    def __init__(self, n=50000, block=128, vocab=96):
        self.data = torch.randint(0, vocab, (n + block + 1,))
        self.block = block

    def __len__(self):
        return len(self.data) - self.block - 1

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block + 1]
        return chunk[:-1], chunk[1:]


class Trainer:
    def __init__(self, model, optimizer, dataset, save_every=1):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        self.model = model.to(self.local_rank)
        self.optimizer = optimizer
        self.loader = DataLoader(dataset, batch_size=64, sampler=DistributedSampler(dataset), pin_memory=True)
        self.save_every = save_every
        self.model = DDP(self.model, device_ids=[self.local_rank])

    def _run_batch(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        logits = self.model(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        return loss.item()

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self.loader.sampler.set_epoch(epoch)
            for x, y in self.loader:
                x = x.to(self.local_rank)
                y = y.to(self.local_rank)
                loss = self._run_batch(x, y)
            if self.global_rank == 0 and epoch % self.save_every == 0:
                print(f"epoch {epoch} loss {loss:.4f}")
                torch.save(self.model.module.state_dict(), "snapshot.pt")


def main():
    ddp_setup()
    model = torch.nn.Sequential(
        torch.nn.Embedding(96, 256),
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(256, 8, batch_first=True), 4),
        torch.nn.Linear(256, 96),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    Trainer(model, optimizer, CharDataset()).train(10)
    destroy_process_group()


if __name__ == "__main__":
    main()
