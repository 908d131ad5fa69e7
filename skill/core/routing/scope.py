"""Deciding whether a question belongs to this assistant's field at all.

The field is PyTorch distributed training: FSDP1/FSDP2, sharding, mixed precision, offload, Join,
backends, process-group initialisation, distributed checkpoints and debugging them.  The router
abstains (with a reason) instead of returning a random section when:

* the question asks for prices, licences or purchases (the knowledge has none);
* it asks for install commands (out of scope by design: ``pip`` / ``conda`` lines change too often);
* it is about another framework (TensorFlow, JAX, DeepSpeed ...) and names nothing of ours;
* it names no term of the field and no section matches it well (weather, recipes, CSS ...).

``anchors`` are words that only make sense in this field; they are collected from the cards
(API names, aliases, titles) plus the fixed list below, so new cards widen the field by themselves.
"""

from __future__ import annotations

import re

# Terms that put a question in the field by themselves (tokenized forms, see fsdp_skill.core.routing.tokenize).
STRONG_ANCHORS = frozenset(
    """fsdp fsdp1 fsdp2 fullyshard fullyshardeddataparallel shard hsdp zero2 zero3 dtensor devicemesh
    nccl gloo mpi ucc xccl rccl torchrun torchelastic rendezvous rdzv distribut ddp
    distributeddataparallel collective allreduce allgather reducescatter backend processgroup rank
    worldsize localrank joinable joinhook offload cpuoffload dcp statedict mixedprecision infiniband
    gpudirect nvlink ipoib multinode multigpu nproc watchdog uneven shardedgradscaler reshard unshard
    fsdpmodule""".split()
)
# Strong anchors that other fields use too ("shard a table", "rank rows"): they do not keep a question
# about a data or infrastructure tool in scope.
GENERIC_ANCHORS = frozenset({"shard", "rank", "backend", "distribut", "collective", "reshard", "uneven", "分片", "后端"})
# Terms of machine learning in general: they count only together with a good section match.
WEAK_ANCHORS = frozenset(
    """cuda gpu xpu bf16 bfloat16 fp16 float16 fp32 precision checkpoint hang deadlock mesh
    broadcast barrier gradient optimizer parameter param model train timeout nan worker
    memory oom dataparallel join prefetch mix""".split()
)
# Phrases of the field written as separate words.
# Every pattern of this module is lowercase and searched in the lowercased question (:func:`lowered`): the same
# matches as re.IGNORECASE on the question (tests/test_routing_case.py holds them equal), at half the cost.
STRONG_PHRASES = re.compile(
    r"\b(init(?:iali[sz]e)? method|process groups?|world[ -]size|local[ -]rank|data[ -]parallel|model[ -]parallel|"
    r"mixed[ -]precision|uneven inputs?|device mesh|state[ -]dict|multi[ -]?gpus?|multiple gpus|multi[ -]?node|"
    r"multiple (?:nodes|machines)|all[ -]reduce|all[ -]gather|reduce[ -]scatter|gradient sync(?:hroni[sz]ation)?|"
    r"(?:env|tcp|file)://|\d+ (?:gpus?|nodes?|machines?|hosts?|ranks?|workers?|processes))",
)
STRONG_ANCHORS_ZH = (
    "分布式",
    "分片",
    "混合精度",
    "半精度",
    "卸载",
    "后端",
    "进程组",
    "集合通信",
    "多卡",
    "多机",
    "数据并行",
    "不均匀",
    "并行训练",
    "训练卡住",
    "显存",
    "多台机器",
    "多台",
    "多节点",
    "单机多卡",
    "一张卡",
    "多张卡",
    "放不下",
)
WEAK_ANCHORS_ZH = (
    "检查点",
    "梯度",
    "初始化",
    "通信",
    "卡住",
    "挂起",
    "死锁",
    "张量",
    "模型",
    "优化器",
    "训练",
    "参数",
    "环境变量",
    "网卡",
    "超时",
    "报错",
    "调试",
    "精度",
)

# Words that only ever mean money.
_PRICE = re.compile(
    r"\b(price|prices|pricing|licen[cs]e|licensing|"
    r"subscription|purchase|buy|billing|invoice|dollars?|usd|per hour|hourly rate)\b|\$\s?\d|价格|多少钱|收费|价钱|购买|授权费|许可证|美元",
)
# Words with a second, technical sense ("communication cost", "expensive all-gather", 开销): money only
# when the question also speaks of money (a cloud bill, renting GPUs, a budget in currency).
_COST_WORDS = re.compile(r"\b(cost|costs|costly|cheap(?:er|est)?|expensive|free|budget|fee|fees)\b|开销|代价|费用|成本|便宜|贵")
_MONEY_CONTEXT = re.compile(
    r"\b(cloud|aws|gcp|azure|lambda labs|runpod|rent(?:al|ing)?|bill(?:ed|ing)?|spot instances?|on-demand|"
    r"invoice|credit card|money|euros?|yuan|rmb)\b|云服务|租|账单|花多少钱|块钱|人民币|元/",
)
_INSTALL = re.compile(
    r"\b(pip3? install|conda install|apt(?:-get)? install|brew install|how (?:do|can|to) (?:i |you |we )?install|"
    r"installation (?:command|instructions?|steps?)|install(?:ing)? (?:pytorch|torch|cuda|nccl|the package))\b|安装",
)
_OTHER_FRAMEWORKS = re.compile(
    r"\b(tensorflow|keras|jax|flax|mxnet|paddle(?:paddle)?|mindspore|horovod|deepspeed|megatron(?:-lm)?|colossal-?ai|"
    r"fairscale|vllm|sglang|tensorrt(?:-llm)?|text-generation-inference|ollama|llama\.cpp|xtuner|llama-?factory|axolotl|unsloth|"
    r"mirroredstrategy|tpu ?strategy|pmap|xla ?sharding|mesh-tensorflow)\b|飞桨|昇思",
)
# Data and infrastructure tools: out of scope only when the question names no term of our field
# ("init_process_group hangs on Kubernetes pods" is ours; "shard a postgres table" is not).
_DATA_TOOLS = re.compile(
    r"\b(scikit-learn|sklearn|spark|dask|pandas|polars|postgres(?:ql)?|mysql|sql|mongodb|redis|elasticsearch|kafka|"
    r"cassandra|database|kubernetes|k8s)\b|数据库",
)
# APIs that name their framework ("MirroredStrategy" -> TensorFlow), for the abstention's reason.
_FRAMEWORK_OF = {
    "mirroredstrategy": "TensorFlow",
    "tpustrategy": "TensorFlow",
    "keras": "Keras (TensorFlow)",
    "pmap": "JAX",
    "xlasharding": "JAX/XLA",
    "flax": "Flax (JAX)",
}
# Words that tie a question about another framework back to ours (e.g. "FSDP vs DeepSpeed ZeRO-3").
_OURS = re.compile(
    r"\b(fsdp\d?|fully_shard|fullyshardeddataparallel|torch\.distributed|torchrun|ddp|dtensor|devicemesh|"
    r"shardingstrategy|hybrid_shard|full_shard)\b",
)
# A comparison with PyTorch or a move to it ("DeepSpeed vs PyTorch", "migrate from Horovod to PyTorch").
_COMPARE = re.compile(
    r"\b(vs\.?|versus|compared? (?:to|with)|comparison|equivalent|counterpart|instead of|migrat\w*|switch(?:ing)? "
    r"(?:from|to)|port(?:ing)? (?:from|to)|convert\w* (?:from|to)|replace|mapping)\b|对比|比较|区别|迁移|相当于|等价|对应|换成|替代",
)
_IN_PLATFORM = re.compile(r"\b(?:in|with|using|on) (jax|tensorflow|keras|flax|mxnet|paddle(?:paddle)?|mindspore)\b")
_PYTORCH = re.compile(r"\b(pytorch|torch)\b")


def lowered(text: str) -> str:
    """``text`` lowercased, for the lowercase patterns of this module and of the router."""
    return text.lower()


def _said(question: str, low: str, m: re.Match[str], group: int = 0) -> str:
    """The words of ``question`` that ``m`` (a match in ``low``, the question lowercased) found, as the question
    wrote them when lowering kept every offset, else as lowercased."""
    return question[m.start(group) : m.end(group)] if len(low) == len(question) else m.group(group)


def out_of_scope_reason(question: str, field_terms: bool = False) -> str | None:
    """A reason to abstain that can be read off the question alone, or None.

    ``field_terms``: the question names strong terms of the field (see :func:`anchor_hits`), which keeps
    a question that mentions a data or infrastructure tool (Kubernetes, pandas) in scope.

    >>> out_of_scope_reason("How much does an FSDP license cost per GPU?")
    'prices and licensing are outside this assistant: it covers how to use PyTorch FSDP and torch.distributed, not what they cost'
    """
    low = lowered(question)
    if _PRICE.search(low) or (_COST_WORDS.search(low) and _MONEY_CONTEXT.search(low)):
        return (
            "prices and licensing are outside this assistant: it covers how to use PyTorch FSDP and "
            "torch.distributed, not what they cost"
        )
    if _INSTALL.search(low):
        return (
            "install commands are outside this assistant: follow the official 'Get Started' selector at "
            "https://pytorch.org/get-started/locally/ for your platform; ask here how to use FSDP or torch.distributed"
        )
    m = _IN_PLATFORM.search(low)  # "... in JAX": the setting is another platform, whatever it names
    if m:
        return (
            f"the question is about doing this in {_said(question, low, m, 1)}, not in PyTorch: this assistant covers PyTorch "
            f"FSDP and torch.distributed only"
        )
    m = _OTHER_FRAMEWORKS.search(low)
    if m and not _OURS.search(low) and not (_COMPARE.search(low) and _PYTORCH.search(low)):
        name = _FRAMEWORK_OF.get(m.group(0).replace(" ", ""), _said(question, low, m))
        return (
            f"the question is about {name}'s own API or configuration, not PyTorch: this assistant covers "
            f"PyTorch FSDP and torch.distributed only (comparisons with FSDP, or moving to it, are answered)"
        )
    m = _DATA_TOOLS.search(low)
    if m and not field_terms and not _OURS.search(low):
        return (
            f"the question is about {_said(question, low, m)}, not PyTorch distributed training: this assistant covers "
            f"PyTorch FSDP and torch.distributed only"
        )
    return None


def anchor_hits(tokens: list[str], question: str, strong: frozenset[str]) -> tuple[list[str], list[str]]:
    """The field's terms in a question as (strong, weak): token anchors plus Chinese substrings."""
    uniq = list(dict.fromkeys(tokens))
    strong_hits = [t for t in uniq if t in strong] + [z for z in STRONG_ANCHORS_ZH if z in question]
    strong_hits += [m.group(0) for m in STRONG_PHRASES.finditer(lowered(question))]
    weak_hits = [t for t in uniq if t in WEAK_ANCHORS] + [z for z in WEAK_ANCHORS_ZH if z in question]
    return strong_hits, weak_hits
