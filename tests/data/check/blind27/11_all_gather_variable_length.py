import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


@torch.no_grad()
def concat_all_gather(tensor):
    gathered = [torch.zeros_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, tensor)
    return torch.cat(gathered, dim=0)


class TextEncoder(nn.Module):
    def __init__(self, vocab=30522, d=256):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)

    def forward(self, ids, mask):
        h = self.enc(self.emb(ids), src_key_padding_mask=~mask)
        return nn.functional.normalize(h[:, 0], dim=-1)


class MoCoText(nn.Module):
    def __init__(self, queue_size=4096, d=256):
        super().__init__()
        self.q_enc, self.k_enc = TextEncoder(d=d), TextEncoder(d=d)
        for p in self.k_enc.parameters():
            p.requires_grad_(False)
        self.register_buffer("queue_ids", torch.zeros(queue_size, 128, dtype=torch.long))
        self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def enqueue(self, query_idx):
        all_idx = concat_all_gather(query_idx)
        n = all_idx.shape[0]
        p = int(self.ptr)
        self.queue_ids[p : p + n, : all_idx.shape[1]] = all_idx
        self.ptr[0] = (p + n) % self.queue_ids.shape[0]

    def forward(self, query_idx, valid_len):
        max_len = int(valid_len.max())
        query_idx = query_idx[:, :max_len]
        mask = torch.arange(max_len, device=query_idx.device)[None] < valid_len[:, None]
        q = self.q_enc(query_idx, mask)
        with torch.no_grad():
            k = self.k_enc(query_idx, mask)
        self.enqueue(query_idx)
        return (q * k).sum(-1).mean()


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DDP(MoCoText().cuda(), device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    for _ in range(1000):
        ids = torch.randint(1, 30522, (32, 128), device="cuda")
        valid_len = torch.randint(8, 129, (32,), device="cuda")
        loss = -model(ids, valid_len)
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
