"""A ready ``fsdp-skill plan`` command line for questions like "will a 70B model fit on 8 GPUs?" or "how much
memory does FSDP need" (English or Chinese).  Text only: no torch, nothing is run."""
from __future__ import annotations

import re

# Llama-3-style sizes of the built-in transformer by parameter count in billions
PRESETS = {8: "layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256",
           70: "layers=80,dim=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256",
           1: "layers=16,dim=2048,heads=32,kv_heads=8,ffn=8192,vocab=128256",
           3: "layers=28,dim=3072,heads=24,kv_heads=8,ffn=8192,vocab=128256",
           405: "layers=126,dim=16384,heads=128,kv_heads=8,ffn=53248,vocab=128256"}
_ASKS = re.compile(r"\bfits?\b|\bfitting\b|how much (gpu )?memory|memory (do|does|will) .*need|\bOOM\b|out of memory|"
                   r"显存|内存.*(多少|够)|(多少|够).*(内存|显存)|装得下|放得下|放不下", re.I)
_BILLIONS = re.compile(r"(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")
_GPUS = re.compile(r"(\d+)\s*(?:x\s*)?(?:gpus?|cards?|卡|张)", re.I)
_GPU_MEM = re.compile(r"(\d+)\s*(?:GB|GiB|G)\b", re.I)


def plan_command(question: str) -> str | None:
    """The plan command line for a "will it fit / how much memory" question, else None.

    Model size: the nearest preset to an ``NNB`` in the question (default 8B); world size from ``N GPUs``
    (default 8); ``--gpu-memory`` from ``NN GB`` (default 80GiB).
    """
    if not _ASKS.search(question):
        return None
    size = _BILLIONS.search(question)
    billions = float(size.group(1)) if size else 8.0
    preset = min(PRESETS, key=lambda b: abs(b - billions))
    gpus = _GPUS.search(question)
    memory = _GPU_MEM.search(question)
    return (f"fsdp-skill plan --transformer {PRESETS[preset]} --world-size {gpus.group(1) if gpus else 8} "
            f"--seq 4096 --gpu-memory {memory.group(1) if memory else 80}GiB --sweep ac=none,per-block")
