"""Tokenizer: identifiers whole and by parts, error messages, Chinese bigrams, tracebacks."""

import pytest

from fsdp_skill.core.routing.tokenize import is_traceback, language_of, reduce_traceback, stem, tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("reshard_after_forward", ["reshardafterforward", "reshard", "after", "forward"]),
        ("MixedPrecisionPolicy", ["mixedprecisionpolicy", "mix", "precision", "policy"]),
        ("NCCL_SOCKET_IFNAME", ["ncclsocketifname", "nccl", "socket", "ifname"]),
        ("DTensor", ["dtensor", "tensor"]),
        ("GPUs", ["gpu"]),
    ],
    ids=["snake", "camel", "env-var", "acronym-camel", "plural-acronym"],
)
def test_identifiers_whole_and_parts(text, expected):
    assert tokenize(text) == expected


def test_dotted_api_names_give_every_component():
    toks = tokenize("torch.distributed.fsdp.fully_shard")
    assert {"torch", "fsdp", "fullyshard", "fully", "shard"} <= set(toks)


def test_collective_spellings_meet():
    for spelling in ("all-gather", "all_gather", "allgather", "AllGather"):
        assert "allgather" in tokenize(spelling), spelling


def test_stemming_and_stopwords():
    assert tokenize("How do I shard the shards when sharding?") == ["shard", "shard", "shard"]
    assert stem("processes") == "process" and stem("status") == "status" and stem("caches") == "cache"


def test_chinese_bigrams_drop_question_words():
    toks = tokenize("怎么开启混合精度？")
    assert "混合" in toks and "精度" in toks
    assert "怎么" not in toks


def test_mixed_script_keeps_both():
    toks = tokenize("FSDP2 怎么开启 bf16 混合精度")
    assert {"fsdp2", "bf16", "混合", "精度"} <= set(toks)


def test_language_detection():
    assert language_of("How do I shard?") == "en"
    assert language_of("各个进程的数据量不一样怎么办") == "zh"
    assert language_of("FSDP2 怎么开启 bf16 混合精度？") == "zh"
    assert language_of("FSDP2 怎么用 bf16 训练但用 fp32 做梯度归约？") == "zh"
    # English carrying a Chinese term follows English; a Chinese sentence over a pasted log follows Chinese
    assert language_of("How do I combine fully_shard with 梯度累积 and a bf16 policy?") == "mixed"
    assert language_of("训练卡住了，下面是日志，怎么办？\n" + TRACEBACK) == "zh"


TRACEBACK = """Traceback (most recent call last):
  File "/home/u/train.py", line 42, in <module>
    dist.all_reduce(t)
  File "/usr/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 81, in wrapper
    return func(*args, **kwargs)
  File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2806, in all_reduce
    work = group.allreduce([tensor], opts)
RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
"""


def test_traceback_reduced_to_message_and_frames():
    assert is_traceback(TRACEBACK)
    reduced = reduce_traceback(TRACEBACK)
    assert "all_reduce" in reduced and "Expected all tensors to be on the same device" in reduced
    assert "/usr/lib" not in reduced and "line 42" not in reduced
    assert "work = group.allreduce" not in reduced  # echoed source lines are dropped
    assert not is_traceback("How do I handle uneven inputs?")
