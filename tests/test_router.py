"""Routing of English, Chinese and traceback questions, and abstention, on the real knowledge."""

import json
from pathlib import Path

import pytest

from fsdp_skill.core.answer import ask

QUESTIONS = Path(__file__).parent / "data" / "questions.jsonl"


def _load(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _hit(answer, q, k=3):
    for s in answer.sections[:k]:
        text = "\n".join([s.title, s.text] + [sn.code for sn in s.snippets]).lower()
        if all(t.lower() in text for t in q.get("all", [])) and (not q.get("any") or any(t.lower() in text for t in q["any"])):
            return True
    return False


@pytest.mark.parametrize(
    "question, topic",
    [
        ("How do I train in bf16 with FSDP2 but reduce gradients in fp32?", "mixed-precision"),
        ("My ranks have different numbers of batches and training hangs at the end", "join"),
        ("Which backend should I use for distributed training on CPUs?", "backends"),
        ("FSDP2 怎么开启 bf16 混合精度？", "mixed-precision"),
        ("各个进程的数据量不一样（不均匀输入），怎么避免训练卡住？", "join"),
        ("显存不够，FSDP 能把参数卸载到 CPU 吗？", "offload"),
        ("init_device_mesh 和 init_process_group 有什么区别？", "init"),
    ],
    ids=["en-mp", "en-join", "en-backend", "zh-mp", "zh-join", "zh-offload", "zh-init"],
)
def test_routes_to_topic(question, topic):
    ans = ask(question, verify=False, with_api=False)
    assert not ans.abstained, ans.reason
    assert topic in [s.topic for s in ans.sections[:3]]
    assert ans.topics[0].id == topic
    assert abs(sum(t.score for t in ans.topics) - 1.0) < 1e-3


TRACEBACK = """Traceback (most recent call last):
  File "/home/me/train.py", line 31, in <module>
    main()
  File "/home/me/train.py", line 12, in main
    dist.init_process_group("nccl")
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 81, in wrapper
    return func(*args, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 246, in _env_rendezvous_handler
    master_addr = _get_env_or_raise("MASTER_ADDR")
ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR expected, but not set
"""


def test_pasted_traceback_finds_the_message_section():
    ans = ask(TRACEBACK, verify=False, with_api=False)
    assert not ans.abstained
    assert any("MASTER_ADDR" in s.text for s in ans.sections[:3])


@pytest.mark.parametrize(
    "question",
    [
        "How much does an FSDP license cost per GPU?",
        "What is the best recipe for chocolate cake?",
        "今天北京天气怎么样？",
        "How do I center a div in CSS?",
        "pip install torch==2.13.0 for cuda 12",
        "How do I use Horovod with Keras?",
    ],
)
def test_abstains_with_reason(question):
    ans = ask(question, verify=False)
    assert ans.abstained and ans.reason
    assert ans.sections == [] and ans.api == []


# blind_questions.jsonl was written by someone who had not read the cards; b46 ("FSDP compared to
# DeepSpeed ZeRO-3 in JAX") names FSDP and is answered on purpose, so it is left out of the abstention check.
@pytest.mark.parametrize("path", [QUESTIONS, QUESTIONS.with_name("blind_questions.jsonl")], ids=["own", "blind"])
def test_own_question_set_figures(path):
    """The project's question sets: no false abstentions, out-of-scope abstained, hit@3 >= 0.85
    (figures reported in the closing notes via ../shared/eval/score.py)."""
    qs = [q for q in _load(path) if q["id"] != "b46"]
    hits = n_in = 0
    for q in qs:
        ans = ask(q["question"], verify=False, with_api=False)
        if q.get("abstain"):
            assert ans.abstained, f"{q['id']} should abstain: {q['question']}"
            continue
        n_in += 1
        assert not ans.abstained, f"{q['id']} falsely abstained: {ans.reason}"
        hits += _hit(ans, q)
    assert hits / n_in >= 0.85, f"hit@3 {hits}/{n_in}"


def test_router_cache_is_keyed_by_how_documents_are_built(monkeypatch, fsdp_skill_home):
    """A change to document building or to the stored index (DOCUMENTS_FORMAT) must not be served from an older
    on-disk cache."""
    from fsdp_skill.core.knowledge.cards import load_knowledge
    from fsdp_skill.core.routing import router as router_mod

    kb = load_knowledge()
    router_mod.Router(kb)  # writes the cache for the current format
    written = sorted(p.name for p in fsdp_skill_home.glob("router-*.json"))
    name = f"router-{kb.digest}-t{router_mod.TOKENIZER_VERSION}-d{router_mod.DOCUMENTS_FORMAT}"
    assert written == [f"{name}-zh.json", f"{name}.json"]
    poisoned = json.loads((fsdp_skill_home / f"{name}.json").read_text())
    poisoned["index"]["postings"] = {"zzpoisonzz": "0 1"}
    (fsdp_skill_home / f"{name}.json").write_text(json.dumps(poisoned))
    assert list(router_mod.Router(kb).index.postings) == [
        "zzpoisonzz"
    ]  # same format: the cache is used (so the check below can fail)
    monkeypatch.setattr(router_mod, "DOCUMENTS_FORMAT", router_mod.DOCUMENTS_FORMAT + 1)
    assert "zzpoisonzz" not in router_mod.Router(kb).index  # a new format rebuilds


# --------------------------------------------------------------------------- inputs that used to fail (issue 9)
FIRST_SECTION = [
    (
        "What is the communication cost of FULL_SHARD compared to SHARD_GRAD_OP?",
        {"parallelism/communication-volume", "sharding/full-shard-vs-shard-grad-op"},
    ),
    ("How expensive is CPU offload with fully_shard?", {"offload/offload-cost-tradeoffs"}),
    pytest.param(
        "RuntimeError: FSDP parameters should be materialized on CPU when enabling CPU offloading. For example, "
        'load a CPU state dict or call module.to_empty(device="cpu").',
        {"offload/fsdp2-cpu-offload-policy"},
        marks=pytest.mark.torch,
    ),
    (
        "RuntimeError: use_libuv was requested but PyTorch was built without libuv support, run with USE_LIBUV=0 to disable it.",
        {"launch/windows-libuv"},
    ),
    (
        "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
        {"init/default-pg-not-initialized"},
    ),
    ("Is FSDP2 equivalent to ZeRO-3 from DeepSpeed?", {"parallelism/fsdp-vs-deepspeed-zero"}),
    ("两台机器每台 8 张卡，应该用 FULL_SHARD 还是 HYBRID_SHARD？", {"parallelism/hsdp-or-full-shard-multi-node"}),
    ("DeepSpeed ZeRO-3 和 FSDP 有什么区别？", {"parallelism/fsdp-vs-deepspeed-zero"}),
    ("How do I migrate from Horovod to PyTorch DDP/FSDP?", None),
]


@pytest.mark.parametrize(
    "question, first", FIRST_SECTION, ids=[(q.values[0] if hasattr(q, "values") else q[0])[:50] for q in FIRST_SECTION]
)
def test_field_question_is_answered_with_the_right_section_first(question, first):
    answer = ask(question, k=3, verify=False)
    assert not answer.abstained, answer.reason
    if first is not None:
        assert answer.sections[0].id in first, [s.id for s in answer.sections]


def test_multi_node_choice_recommends():
    answer = ask("两台机器每台 8 张卡，应该用 FULL_SHARD 还是 HYBRID_SHARD？", k=1, verify=False)
    text = answer.sections[0].text
    assert "HYBRID_SHARD" in text and "FULL_SHARD" in text and "Answer: **HSDP**" in text  # a recommendation


OTHER_FRAMEWORKS = [
    ("vLLM 部署时显存占用太高怎么办？", "vLLM"),
    ("How do I set the zero_optimization stage in a DeepSpeed config json?", "DeepSpeed"),
    ("DeepSpeed 配置文件里 offload_optimizer 怎么写？", "DeepSpeed"),
    ("Megatron-LM 的 --tensor-model-parallel-size 参数怎么设置？", "Megatron-LM"),
    ("What does --pipeline-model-parallel-size do in Megatron-LM?", "Megatron-LM"),
    ("How do I use hvd.DistributedOptimizer in Horovod?", "Horovod"),
    ("fairscale 的 OSS 优化器怎么用？", "fairscale"),
    ("How do I configure the Colossal-AI GeminiPlugin placement policy?", "Colossal-AI"),
    ("How do I serve a 70B model with vLLM tensor parallel on 4 GPUs?", "vLLM"),
    ("jax.pmap 怎么在多卡上做数据并行？", "jax"),
    ("How do I use tf.distribute.MirroredStrategy in TensorFlow?", "TensorFlow"),
]


@pytest.mark.parametrize("question, framework", OTHER_FRAMEWORKS, ids=[q[:40] for q, _ in OTHER_FRAMEWORKS])
def test_other_frameworks_own_api_abstains_naming_it(question, framework):
    answer = ask(question, k=3, verify=False)
    assert answer.abstained and framework.lower() in answer.reason.lower(), (answer.reason, [s.id for s in answer.sections])


@pytest.mark.parametrize(
    "question",
    [
        "How much does it cost to rent 8 A100 GPUs on AWS for FSDP training?",
        "FSDP 训练在云上租 8 张 A100 一个月要花多少钱？",
        "What is the price of an FSDP license?",
    ],
)
def test_money_questions_abstain(question):
    answer = ask(question, k=3, verify=False)
    assert answer.abstained and "prices" in answer.reason


def test_setup_question_gets_a_recipe_first_and_each_part_a_place():
    q = (
        "I train a 7B model on 2 nodes x 8 GPUs with FSDP2 in bf16 with gradient accumulation and clipping. "
        "I want to save sharded checkpoints every 500 steps and resume from the latest complete one. "
        "What setup should I use?"
    )
    ids = [s.id for s in ask(q, k=5, verify=False).sections]
    assert ids[0].startswith("recipes/"), ids
    q = (
        "How do I enable CPU offload with fully_shard? Also, how do I keep my norms in fp32 with "
        "MixedPrecisionPolicy? And why does my job hang at the end of the epoch when ranks have different "
        "numbers of batches?"
    )
    ids = [s.id for s in ask(q, k=4, verify=False).sections]
    assert {ids[i].split("/")[0] for i in range(4)} >= {"offload", "mixed-precision", "join"}, ids


def _all_questions() -> list[str]:
    """Every question of the question sets in tests/data (English, Chinese, mixed, tracebacks, out of scope)."""
    out = []
    for path in sorted(QUESTIONS.parent.glob("*.jsonl")):
        out += [q["question"] for q in _load(path) if isinstance(q, dict) and isinstance(q.get("question"), str)]
    return out


def test_memoised_term_scores_equal_rank_bm25():
    """The router scores from its cached index in pure Python; rank-bm25, which built the index, is the
    reference: equal floats (not close ones) for the tokens of every question of the question sets as route()
    scores them, for repeated and unknown terms, on the main index and on the Chinese bodies' index; and the
    same idf for every term."""
    from fsdp_skill.core.knowledge.cards import load_knowledge
    from fsdp_skill.core.routing.router import MAX_QUERY_TOKENS, Router
    from fsdp_skill.core.routing.tokenize import has_cjk, tokenize

    kb = load_knowledge()
    Router(kb)  # builds the index and writes the cache
    router = Router(kb)  # the index read back from the cache file; router.bm25 is built from the tokens again
    assert router._reference is None, "the second router must come from the cache"
    questions = _all_questions()
    assert len(questions) >= 250, len(questions)
    extra = [["fullyshard", "bf16", "offload", "bf16", "nosuchtoken"], ["混合", "精度", "混合"]]
    assert router.zh_bm25 is not None  # the Chinese bodies are indexed
    compared = 0
    for tokens in [router.correct(tokenize(q)[:MAX_QUERY_TOKENS]) for q in questions] + extra:
        known = [t for t in tokens if t in router.bm25.idf]
        assert known == [t for t in tokens if t in router.index]
        assert router.scores(known) == router.bm25.get_scores(known).tolist(), tokens
        zh = [t for t in tokens if t in router.zh_bm25.idf and has_cjk(t)]
        assert router.zh_scores(tokens) == router.zh_bm25.get_scores(zh).tolist(), tokens
        compared += bool(known) + bool(zh)
    assert compared >= 300, compared
    for bm25, index in ((router.bm25, router.index), (router.zh_bm25, router.zh_index)):
        assert index is not None and list(index.postings) == list(bm25.idf)
        assert [index.idf(t) for t in bm25.idf] == list(bm25.idf.values())
        assert index.idf_max == max(bm25.idf.values())


@pytest.mark.parametrize(
    "question",
    [
        "How much does FSDP cost in GPU memory per parameter with Adam?",
        "how much time do we spend in communication with FULL_SHARD, is overlap free?",
        "init_process_group hangs on Kubernetes pods",
        "My NCCL all_reduce is slow on k8s, which NCCL_SOCKET_IFNAME should I set?",
    ],
)
def test_technical_costs_and_infrastructure_are_in_scope(question):
    assert not ask(question, k=3, verify=False).abstained


@pytest.mark.parametrize("question", ["How do I shard a postgres table?", "pandas dataframe 怎么分片"])
def test_data_tools_without_field_terms_abstain(question):
    answer = ask(question, k=3, verify=False)
    assert answer.abstained and "not PyTorch" in answer.reason


def test_chinese_multi_part_question_gives_each_part_a_place():
    q = "第一，FSDP2 怎么开启 CPU offload？第二，bf16 混合精度怎么配置？第三，各 rank 数据量不同训练卡住怎么办？"
    topics = {s.topic for s in ask(q, k=3, verify=False).sections}
    assert topics >= {"offload", "mixed-precision", "join"}, topics


def test_best_section_of_a_part_is_what_route_gives_it():
    """What a long question's parts are scored with (Router.best_section) is route(part, k=1, in_field=True):
    the same section and the same float, None where route gives no section; on every part of every question,
    and on the whole questions too (Chinese, tracebacks, scripts, focused and recipe questions alike)."""
    from fsdp_skill.core.routing.router import get_router, question_parts

    router = get_router()
    texts = []
    for q in _all_questions():
        texts += [q, *question_parts(q, min_tokens=1)]
    texts += ["", "zzzz qqqq", "训练", "a full training script example with bf16 and checkpoints on 2 nodes"]
    found = 0
    for text in texts:
        routed = router.route(text, k=1, in_field=True).sections
        assert router.best_section(text) == (routed[0] if routed else None), text
        found += bool(routed)
    assert found >= 500, found
