import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer


class DilocoWorker:
    def __init__(self, local_rank, max_norm=1.0, lr=4e-4):
        self.device = torch.device("cuda", local_rank)
        cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=12,
                          num_attention_heads=16, vocab_size=32000)
        wrap = functools.partial(transformer_auto_wrap_policy,
                                 transformer_layer_cls={LlamaDecoderLayer})
        self.model = FSDP(
            LlamaForCausalLM(cfg),
            auto_wrap_policy=wrap,
            sharding_strategy=ShardingStrategy.FULL_SHARD,
            mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32),
            device_id=local_rank,
            use_orig_params=True,
        )
        self.max_norm = max_norm
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.1)

    def inner_step(self, input_ids):
        out = self.model(input_ids=input_ids, labels=input_ids)
        out.loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
        self.optimizer.step()
        self.optimizer.zero_grad()
        return out.loss.detach(), grad_norm


def main():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    worker = DilocoWorker(local_rank)
    for step in range(5000):
        ids = torch.randint(0, 32000, (8, 1024), device=worker.device)
        loss, gnorm = worker.inner_step(ids)
        if dist.get_rank() == 0 and step % 20 == 0:
            print(f"step {step} loss {loss.item():.3f} grad_norm {gnorm.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
