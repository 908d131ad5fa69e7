"""A ready ``fsdp-skill plan`` command line for questions like "will a 70B model fit on 8 GPUs?" or "how much
memory does FSDP need" (English or Chinese).  Text only: no torch, nothing is run."""

from __future__ import annotations

import math
import re

# Sizes of the built-in transformer by parameter count in billions, shaped like public decoder models (untied
# embeddings, no biases): Llama 3.2 1B (with a 32000 vocabulary, as its untied 128256 one would make it 1.5B) and
# 3B, Llama 2 7B / 13B, a 32B of Qwen 2.5's shape, Llama 3.1 8B / 70B / 405B.
PRESETS = {
    1: "layers=16,dim=2048,heads=32,kv_heads=8,ffn=8192,vocab=32000",
    3: "layers=28,dim=3072,heads=24,kv_heads=8,ffn=8192,vocab=128256",
    7: "layers=32,dim=4096,heads=32,kv_heads=32,ffn=11008,vocab=32000",
    8: "layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256",
    13: "layers=40,dim=5120,heads=40,kv_heads=40,ffn=13824,vocab=32000",
    32: "layers=64,dim=5120,heads=40,kv_heads=8,ffn=27648,vocab=152064",
    70: "layers=80,dim=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256",
    405: "layers=126,dim=16384,heads=128,kv_heads=8,ffn=53248,vocab=128256",
}


class _Lazy:
    """A regular expression compiled on its first search: most questions are settled by the three compiled at
    import (memory, fit, a model size), and compiling the others would cost every start a millisecond."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def search(self, text: str) -> re.Match[str] | None:
        """``re.compile(source, flags).search(text)``."""
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled.search(text)


_A = r"(?<![A-Za-z0-9])"  # ASCII word edges: Chinese text around a number or name does not count as a letter
_Z = r"(?![A-Za-z0-9])"
# asked outright how much memory a run needs
_MEMORY = re.compile(
    r"how much (gpu |vram |device )?memory|memory (do|does|will|would) .*need|how many gpus|"
    r"需要多少(显存|内存|张|卡)|显存.*(多少|够|需要)|(多少|够).*(显存|内存)|几张卡",
    re.I,
)
# a question about one's model: with _MEMORY it must name a model size or GPUs, or say model / training
_ABOUT_A_RUN = _Lazy(r"\bmodel|\btrain|fine-?tun|模型|训练|微调", re.I)
_FIT = re.compile(r"(?<!best )\bfits?\b|\bfitting\b|\bOOM\b|out of memory|装得下|放得下|放不下|塞得下", re.I)
_CAN_TRAIN = _Lazy(
    r"\b(can|could|possible|enough|able)\b.*\b(train|fine-?tune|run)|"
    r"能.*(训练|微调|跑)|(训练|微调|跑).*(吗|够)",
    re.I,
)
_BILLIONS = re.compile(_A + r"(\d+(?:\.\d+)?)\s*[bB]" + _Z)
_NAMES = r"(?:H200|H100|H800|A100|A800|A10G|A6000|L40S|V100|T4|MI300X|MI250|RTX\s*\d{4}|\d{4})"
_ACCELERATOR = r"(?:gpus?|cards?|devices?|" + _NAMES + r"s?)"
_GPUS = _Lazy(_A + r"(\d+)\s*(?:x|×|\*|张|块|台)?\s*(?:\d+\s*G(?:i?B)?\s+)?(?:" + _ACCELERATOR + _Z + r"|卡|张)", re.I)
_ONE_GPU = _Lazy(r"\b(a|one|single)\s+(single\s+)?(gpus?|" + _NAMES + r")" + _Z + r"|单卡|一张卡", re.I)
_NODES = _Lazy(_A + r"(\d+)\s*(?:nodes?|machines?|hosts?|节点|台机器)", re.I)
# a node count that carries its own GPUs per node: "2 nodes x 8", "2 nodes of 8 GPUs", "2 nodes with 8 each", "2机8卡"
_NODES_OF = _Lazy(
    _A
    + r"(\d+)\s*(?:nodes?|machines?|hosts?)\s*(?:x|×|\*|of|with|each with)\s*(\d+)"
    + _Z
    + r"|"
    + _A
    + r"(\d+)\s*(?:机|台机器|节点)\s*(?:x|×|\*|每台|每机|各)?\s*(\d+)\s*(?:卡|张)",
    re.I,
)
_SEQ = _Lazy(
    r"(?:seq(?:uence)?(?:[ _-]?len(?:gth)?)?|context(?:[ _-]?len(?:gth)?)?|序列长度|上下文长度?)\s*(?:=|:|of|is)?\s*"
    r"(\d+)\s*(k)?" + _Z + r"|" + _A + r"(\d+)\s*(k)?\s*(?:tokens?|context|seq(?:uence)?s?)" + _Z,
    re.I,
)
_HYBRID = _Lazy(r"\bHSDP\b|hybrid[ _-]?shard|\bfull[ _-]?shard\b.*\bor\b|混合分片", re.I)
_GPU_MEM = _Lazy(_A + r"(\d+)\s*(?:GB|GiB|G)" + _Z, re.I)
# memory of common accelerators (GiB, the largest variant) when the question names one and no size
_KNOWN_GPUS = (
    ("H200", 141),
    ("H100", 80),
    ("H800", 80),
    ("A100", 80),
    ("A800", 80),
    ("MI300X", 192),
    ("MI250", 128),
    ("L40S", 48),
    ("A6000", 48),
    ("V100", 32),
    ("A10G", 24),
    ("4090", 24),
    ("3090", 24),
    ("T4", 16),
)


def _nodes_and_gpus(question: str) -> tuple[int, int]:
    """(nodes, GPUs per node): a node count with its own per-node count (``2 nodes x 8``, ``2机8卡``) wins, so that
    ``16 A100s (2 nodes x 8)`` is 16 GPUs, not 32; else GPUs from ``N GPUs`` / ``8xH100`` / ``4张4090`` / ``a single
    GPU`` (default 8) per each of ``N nodes`` (default 1)."""
    both = _NODES_OF.search(question)
    if both:
        n, g = (both.group(1), both.group(2)) if both.group(1) else (both.group(3), both.group(4))
        if int(n) >= 1 and int(g) >= 1:
            return int(n), int(g)
    gpus = _GPUS.search(question)
    per_node = int(gpus.group(1)) if gpus and int(gpus.group(1)) >= 1 else 1 if _ONE_GPU.search(question) else 8
    nodes = _NODES.search(question)
    return (int(nodes.group(1)), per_node) if nodes and gpus and int(nodes.group(1)) >= 1 else (1, per_node)


def _world_size(question: str) -> int:
    """The GPUs of the run (:func:`_nodes_and_gpus`: nodes x GPUs per node)."""
    nodes, per_node = _nodes_and_gpus(question)
    return nodes * per_node


def _seq(question: str) -> int:
    """The sequence length the question names (``seq 4096``, ``8k context``, ``序列长度 2048``), else 4096."""
    m = _SEQ.search(question)
    if not m:
        return 4096
    digits, k = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    value = int(digits) * (1024 if k else 1)
    return value if 16 <= value <= 10_000_000 else 4096


def _gpu_memory(question: str) -> str:
    memory = _GPU_MEM.search(question)
    if memory:
        return memory.group(1)
    return str(next((gib for name, gib in _KNOWN_GPUS if re.search(r"(?<![A-Za-z])" + name, question, re.I)), 80))


def plan_command(question: str) -> str | None:
    """The plan command line for a "will it fit / how much memory" question, else None.

    Model size: the preset nearest (in ratio) to an ``NNB`` in the question (default 8B); world size from
    ``N GPUs`` / ``N H100s`` / ``8x A100`` / ``8 张卡`` / ``a single GPU``, times ``N nodes`` (default 8), or a node
    count with its own (``2 nodes x 8``, ``2机8卡``); with several nodes and HSDP named (``full shard or HSDP``), a
    sweep of the full-shard mesh beside the one-replica-a-node HSDP mesh; ``--seq`` from ``seq 4096`` / ``8k
    context`` (default 4096);
    ``--gpu-memory`` from ``NN GB``, else from a GPU it names (RTX 4090: 24), else 80GiB (vendors' "GB" are
    taken as GiB, as nvidia-smi shows them).
    """
    question = re.sub(r"(\d)\s*[x×*]\s*(?=[A-Za-z0-9])", r"\1 ", question)  # 8xH200 -> 8 H200
    size = _BILLIONS.search(question)
    memory, fit = _MEMORY.search(question), _FIT.search(question)
    if not (memory or fit or size):  # each way of asking below needs one of the three
        return None
    gpus = _GPUS.search(question) or _ONE_GPU.search(question)
    asks = (
        (memory and (size or gpus or _ABOUT_A_RUN.search(question)))
        or (fit and (size or gpus))
        or (size and gpus and _CAN_TRAIN.search(question))
    )
    if not asks:
        return None
    billions = float(size.group(1)) if size and float(size.group(1)) > 0 else 8.0
    preset = min(PRESETS, key=lambda b: abs(math.log(b / billions)))
    nodes, per_node = _nodes_and_gpus(question)
    world = nodes * per_node
    shards = (
        f"--world-size {world}"
        if not (nodes > 1 and _HYBRID.search(question))
        else f"--mesh 1x{world} --sweep mesh=1x{world},{nodes}x{per_node}"  # full shard beside HSDP, one replica a node
    )
    return (
        f"fsdp-skill plan --transformer {PRESETS[preset]} {shards} --seq {_seq(question)} "
        f"--gpu-memory {_gpu_memory(question)}GiB --sweep ac=none,selective-op,per-block"
    )
