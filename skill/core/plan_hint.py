"""A ready ``fsdp-skill plan`` command line for questions like "will a 70B model fit on 8 GPUs?" or "how much
memory does FSDP need" (English or Chinese).  Text only: no torch, nothing is run."""
from __future__ import annotations

import math
import re

# Sizes of the built-in transformer by parameter count in billions, shaped like public decoder models (untied
# embeddings, no biases): Llama 3.2 1B (with a 32000 vocabulary, as its untied 128256 one would make it 1.5B) and
# 3B, Llama 2 7B / 13B, a 32B of Qwen 2.5's shape, Llama 3.1 8B / 70B / 405B.
PRESETS = {1: "layers=16,dim=2048,heads=32,kv_heads=8,ffn=8192,vocab=32000",
           3: "layers=28,dim=3072,heads=24,kv_heads=8,ffn=8192,vocab=128256",
           7: "layers=32,dim=4096,heads=32,kv_heads=32,ffn=11008,vocab=32000",
           8: "layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256",
           13: "layers=40,dim=5120,heads=40,kv_heads=40,ffn=13824,vocab=32000",
           32: "layers=64,dim=5120,heads=40,kv_heads=8,ffn=27648,vocab=152064",
           70: "layers=80,dim=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256",
           405: "layers=126,dim=16384,heads=128,kv_heads=8,ffn=53248,vocab=128256"}
# asked outright about memory: always a plan question
_MEMORY = re.compile(r"how much (gpu |vram |device )?memory|memory (do|does|will|would) .*need|how many gpus|"
                     r"需要多少(显存|内存|张|卡)|显存.*(多少|够|需要)|(多少|够).*(显存|内存)|几张卡", re.I)
# "fit" / OOM: a plan question only with a model size or a GPU count in it
_FIT = re.compile(r"\bfits?\b|\bfitting\b|\bOOM\b|out of memory|装得下|放得下|放不下|塞得下", re.I)
# a model size and a GPU count with "train" / "fine-tune": a plan question too
_TRAIN = re.compile(r"\btrain|fine-?tun|\brun\b|训练|微调", re.I)
_BILLIONS = re.compile(r"(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")
_ACCELERATOR = r"(?:gpus?|cards?|devices?|卡|张|[HAVL]\d{2,3}[A-Z]?s?|RTX\s*\d{4}s?|\d{4}s?|MI\d{3}X?s?)"
_GPUS = re.compile(r"(\d+)\s*(?:x|×|\*)?\s*(?:\d+\s*G(?:i?B)?\s+)?" + _ACCELERATOR + r"(?![\w])", re.I)
_GPU_MEM = re.compile(r"(\d+)\s*(?:GB|GiB|G)(?![\w])", re.I)
# memory of common accelerators (GiB, the largest variant) when the question names one and no size
_KNOWN_GPUS = (("H200", 141), ("H100", 80), ("H800", 80), ("A100", 80), ("A800", 80), ("MI300X", 192), ("MI250", 128),
               ("L40S", 48), ("A6000", 48), ("V100", 32), ("4090", 24), ("3090", 24), ("A10G", 24), ("T4", 16))


def plan_command(question: str) -> str | None:
    """The plan command line for a "will it fit / how much memory" question, else None.

    Model size: the preset nearest (in ratio) to an ``NNB`` in the question (default 8B); world size from
    ``N GPUs`` / ``N H100s`` / ``8x A100`` / ``8 张卡`` (default 8); ``--gpu-memory`` from ``NN GB``, else from a
    GPU it names (RTX 4090: 24), else 80GiB (vendors' "GB" are taken as GiB, as nvidia-smi shows them).
    """
    size = _BILLIONS.search(question)
    gpus = _GPUS.search(question)
    if not (_MEMORY.search(question) or (_FIT.search(question) and (size or gpus))
            or (size and gpus and _TRAIN.search(question))):
        return None
    billions = float(size.group(1)) if size and float(size.group(1)) > 0 else 8.0
    preset = min(PRESETS, key=lambda b: abs(math.log(b / billions)))
    memory = _GPU_MEM.search(question)
    named = next((gib for name, gib in _KNOWN_GPUS if re.search(rf"(?<![\w]){name}", question, re.I)), 80)
    world = int(gpus.group(1)) if gpus and int(gpus.group(1)) >= 1 else 8
    return (f"fsdp-skill plan --transformer {PRESETS[preset]} --world-size {world} "
            f"--seq 4096 --gpu-memory {memory.group(1) if memory else named}GiB --sweep ac=none,per-block")
