# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
"""The built-in decoder-only transformer that ``fsdp-skill plan --transformer`` plans (Llama-style).

    tok_embeddings (vocab x dim) -> layers x Block -> norm (RMSNorm) -> output (dim x vocab, untied)
    Block: x + Attention(RMSNorm(x)) ; h + FeedForward(RMSNorm(h))
    Attention: wq (dim -> heads*head_dim), wk / wv (dim -> kv_heads*head_dim, grouped-query attention),
               rotary position embedding, causal scaled_dot_product_attention, wo (heads*head_dim -> dim)
    FeedForward (SwiGLU): w2(silu(w1(x)) * w3(x)), w1 / w3 dim -> ffn, w2 ffn -> dim

No bias anywhere, as in Llama.  Runs in the planner's child process under the target interpreter, so this
file needs only the standard library and torch (it is loaded by path, never as part of fsdp_skill there).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

FIELDS = ("layers", "dim", "heads", "kv_heads", "ffn", "vocab")


def param_count(layers: int, dim: int, heads: int, kv_heads: int, ffn: int, vocab: int) -> int:
    """Number of parameters of :class:`Transformer` with these sizes (no allocation)."""
    head_dim = dim // heads
    attn = dim * heads * head_dim * 2 + dim * kv_heads * head_dim * 2
    block = attn + 3 * dim * ffn + 2 * dim
    return 2 * vocab * dim + layers * block + dim


# torch is not analysed (pyproject's mypy section): nn.Module is Any, so each subclass says it means to subclass it
class RMSNorm(nn.Module):  # type: ignore[misc]
    """Root-mean-square norm with a learned scale (no bias)."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Any) -> Any:
        norm = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return norm.type_as(x) * self.weight


def rotary(seq: int, head_dim: int, device: Any, theta: float = 500000.0) -> tuple[Any, Any]:
    """(cos, sin) of shape (seq, head_dim) for rotary position embedding."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim))
    freqs = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def _rotate(x: Any, cos: Any, sin: Any) -> Any:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)


class Attention(nn.Module):  # type: ignore[misc]
    """Causal self-attention with grouped-query heads (``kv_heads`` divides ``heads``)."""

    def __init__(self, dim: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)

    def forward(self, x: Any, cos: Any, sin: Any) -> Any:
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class FeedForward(nn.Module):  # type: ignore[misc]
    """SwiGLU MLP: ``w2(silu(w1(x)) * w3(x))``."""

    def __init__(self, dim: int, ffn: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, ffn, bias=False)
        self.w2 = nn.Linear(ffn, dim, bias=False)
        self.w3 = nn.Linear(dim, ffn, bias=False)

    def forward(self, x: Any) -> Any:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):  # type: ignore[misc]
    """One decoder block: pre-norm attention and pre-norm SwiGLU MLP, each with a residual."""

    def __init__(self, dim: int, heads: int, kv_heads: int, ffn: int) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, heads, kv_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, ffn)

    def forward(self, x: Any, cos: Any, sin: Any) -> Any:
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):  # type: ignore[misc]
    """Decoder-only transformer; ``forward(tokens)`` returns logits (batch, seq, vocab)."""

    def __init__(self, layers: int, dim: int, heads: int, kv_heads: int, ffn: int, vocab: int) -> None:
        super().__init__()
        if dim % heads or heads % kv_heads:
            raise ValueError(f"dim({dim}) must be a multiple of heads({heads}) and heads of kv_heads({kv_heads})")
        self.head_dim = dim // heads
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(Block(dim, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        for p in self.parameters():  # a cheap init (the plan never reads values; tests train it for real)
            if p.dim() > 1:
                nn.init.normal_(p, std=1.0 / math.sqrt(p.shape[-1]))

    def forward(self, tokens: Any) -> Any:
        h = self.tok_embeddings(tokens)
        cos, sin = rotary(tokens.shape[1], self.head_dim, h.device)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def loss_fn(logits: Any, tokens: Any) -> Any:
    """Next-token cross-entropy of ``logits`` against ``tokens`` shifted by one (fp32 loss)."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten())
