"""Records (:mod:`fsdp_skill.records`) stand in for the pydantic models they replaced.

- Their JSON is byte for byte pydantic's ``TypeAdapter(T).dump_json(value)``: on every answer of the question sets
  in tests/data (with and without verdicts), on verdicts with every field set, on the findings of the check
  fixtures, on floats of every magnitude and on strings holding every kind of character.
- ``from_data`` (what the cache readers call) accepts and refuses exactly what pydantic's ``model_validate``
  does, with the same values: on valid cache data and on spoilt samples, written by hand and drawn at random;
  exact-shape data never reaches pydantic.
- ``model_validate`` has the strictness of a ``BaseModel`` with the same fields (the models they were).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import random
import struct
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, create_model

from fsdp_skill.core.answer import ask
from fsdp_skill.core.check import check_code, check_source
from fsdp_skill.core.check.models import CheckReport, Finding, Rule
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.models import (
    Answer,
    ApiInfo,
    Card,
    ErrorInfo,
    RaisedAt,
    SectionDoc,
    SectionOut,
    SnippetOut,
    SnippetSpec,
    TopicScore,
)
from fsdp_skill.core.verify.snippets import SnippetInfo, get_snippet
from fsdp_skill.records import Record, json_float
from fsdp_skill.runtime.models import RankResult, Verdict

DATA = Path(__file__).parent / "data"
RECORDS = [
    SnippetSpec,
    SectionDoc,
    Card,
    TopicScore,
    SnippetOut,
    SectionOut,
    ApiInfo,
    RaisedAt,
    ErrorInfo,
    Answer,
    Rule,
    Finding,
    CheckReport,
    RankResult,
    Verdict,
    SnippetInfo,
]


def _questions() -> list[str]:
    return [
        json.loads(line)["question"]
        for path in sorted(DATA.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


@functools.cache
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


def _same_json(value: Record) -> None:
    """The record's JSON (compact and indented) and plain forms are pydantic's."""
    adapter = _adapter(type(value))
    assert value.model_dump_json() == adapter.dump_json(value).decode("utf-8")
    assert value.model_dump_json(indent=1) == adapter.dump_json(value, indent=1).decode("utf-8")
    assert value.model_dump() == adapter.dump_python(value)
    assert value.model_dump(mode="json") == adapter.dump_python(value, mode="json")


# --------------------------------------------------------------------------- JSON text
def test_every_record_is_a_slotted_keyword_only_dataclass_with_described_fields():
    for cls in RECORDS:
        assert dataclasses.is_dataclass(cls) and issubclass(cls, Record) and "__slots__" in cls.__dict__, cls
        schema = cls.model_json_schema()
        assert schema["description"] == inspect.cleandoc(cls.__doc__), cls  # the class docstring, as a BaseModel's
        if cls is not Card:  # the parsed card's fields never had descriptions
            assert all("description" in p for p in schema["properties"].values()), cls
    with pytest.raises(TypeError):
        TopicScore("join", 0.5)  # type: ignore[misc]  # keyword-only, as pydantic's


def _generated_twin(cls: type) -> type:
    """A plain dataclass with ``cls``'s fields whose ``__eq__`` and ``__repr__`` the decorator generates."""
    twin = dataclasses.make_dataclass(cls.__name__, [(f.name, typing.Any) for f in dataclasses.fields(cls)], eq=True, repr=True)
    twin.__qualname__ = cls.__qualname__
    return twin


def test_records_compare_and_print_as_the_dataclass_decorator_would_make_them(fake_verifier):
    """Each record leaves ``__eq__`` and ``__repr__`` to Record (no compile per class at import), and those give
    what ``@dataclass(eq=True, repr=True)`` generates: on answers, verdicts and findings, equal and changed."""
    for cls in RECORDS:
        assert "__eq__" not in cls.__dict__ and "__repr__" not in cls.__dict__, cls
        assert cls.__hash__ is None, cls  # unhashable, as a mutable dataclass with eq is
    answer = ask("How do I train in bf16 with FSDP2 but reduce gradients in fp32?", verify=True, verifier=fake_verifier)
    report = check_code("import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n")
    values = [answer, *answer.sections, *answer.sections[0].snippets, answer.sections[0].snippets[0].verification, report]
    values += report.findings
    assert report.findings and answer.sections[0].snippets
    for value in values:
        twin = _generated_twin(type(value))
        names = [f.name for f in dataclasses.fields(value)]
        as_twin = twin(**{n: getattr(value, n) for n in names})
        assert repr(value) == repr(as_twin)
        copy = value.model_copy()
        assert value == copy and not (value != copy) and as_twin == twin(**{n: getattr(copy, n) for n in names})
        changed = value.model_copy(update={names[0]: object()})
        assert value != changed
        assert value.__eq__(as_twin) is NotImplemented  # another class: NotImplemented, as the generated one
    nested = answer.model_copy()
    nested.errors = [nested]  # type: ignore[list-item]  # a record inside itself
    assert "errors=[...]" in repr(nested)


def test_answers_of_every_question_are_pydantic_json(fake_verifier):
    questions = _questions()
    assert len(questions) > 200
    for i, question in enumerate(questions):
        _same_json(ask(question, k=3, verify=i % 4 == 0, verifier=fake_verifier))  # every fourth with verdicts


def test_verdicts_findings_and_snippets_are_pydantic_json(fake_verifier):
    verdict = Verdict(
        status="failed",
        reason='rank 1 failed:\nRuntimeError: \x00 \x1f \x7f \u2028 \\ " 中文 😀',
        snippet_id="join/ddp-join",
        code_sha256="0" * 64,
        backend="gloo",
        world_size=2,
        device="cpu",
        torch_version="2.13.0+cpu",
        python="/env/bin/python",
        cuda_available=False,
        nccl_available=True,
        device_count=0,
        available=True,
        seconds=1.5e-05,
        launcher="torchrun",
        checks="reference",
        nnodes=2,
        ranks=[
            RankResult(rank=0, exit_code=0, output_tail="ok\n"),
            RankResult(
                rank=1, exit_code=None, signal="SIGKILL", killed_by_harness=True, traceback="Traceback…", teardown_crash=True
            ),
        ],
        cached=True,
        checked_at="2026-01-01T00:00:00+00:00",
        teardown_retries=2,
    )
    _same_json(verdict)
    for seconds in (0.0, -0.0, 1e-7, 1e16, 123456789.125, float("inf"), float("nan")):
        _same_json(verdict.model_copy(update={"seconds": seconds}))
    for path in sorted((DATA / "check").glob("*.py")):
        code = path.read_text(encoding="utf-8")
        for finding in check_source(code, path.name):
            _same_json(finding)
        _same_json(check_code(code, path.name))
    kb = load_knowledge()
    for snippet_id in list(kb.snippets)[:10]:
        _same_json(get_snippet(snippet_id, verifier=fake_verifier))
    for card in kb.cards:
        _same_json(card)


def test_floats_are_written_as_pydantic_writes_them():
    rng = random.Random(22)
    samples = [float(f"{m}e{e}") for e in range(-330, 310) for m in (1, 1.5, 1.234, 9.99, 5)]
    samples += [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(20_000)]
    samples += [rng.uniform(-1e6, 1e6) for _ in range(5_000)] + [0.0, -0.0, 5e-324, 1.7976931348623157e308]
    samples += [float("inf"), float("-inf"), float("nan")]
    adapter = TypeAdapter(float)
    for x in samples:
        assert json_float(x) == adapter.dump_json(x).decode(), repr(x)


def test_strings_are_escaped_as_pydantic_escapes_them():
    text = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c <= 0xDFFF) + "😀\U0010ffff"
    finding = Finding(code="FSD001", severity="error", message=text, path=text, line=1, col=1, end_line=1, end_col=2)
    _same_json(finding)
    _same_json(CheckReport(findings=[finding], counts={text[:200]: 1, "total": 1}))


# --------------------------------------------------------------------------- from_data
def _outcome(call, data):
    """('ok', the record's JSON) or ('refused',): what a reader sees."""
    try:
        return ("ok", call(data).model_dump_json())
    except ValidationError:
        return ("refused",)


def _same_outcome(cls: type[Record], data: object) -> None:
    assert _outcome(cls.from_data, data) == _outcome(cls.model_validate, data), data


def _exact_samples() -> list[tuple[type[Record], object]]:
    """Data in the shape the records write it: cards, a verdict, API entries."""
    kb = load_knowledge()
    samples: list[tuple[type[Record], object]] = [(Card, json.loads(json.dumps(c.model_dump()))) for c in kb.cards]
    verdict = Verdict(status="passed", seconds=0.4, ranks=[RankResult(rank=0, exit_code=0), RankResult(rank=1, exit_code=0)])
    samples.append((Verdict, json.loads(verdict.model_dump_json(indent=1))))
    samples.append((ApiInfo, {"name": "torch.distributed.init_process_group", "signature": "(backend=None)", "available": True}))
    samples.append((ApiInfo, {"name": "x.y", "available": False, "reason": "torch is not installed"}))
    return samples


def test_exact_shapes_are_read_without_pydantic(monkeypatch):
    samples = _exact_samples()
    expected = [cls.model_validate(data).model_dump_json() for cls, data in samples]

    def refuse(cls, obj, *, strict=None):
        raise AssertionError(f"{cls.__name__}.from_data went to pydantic for {obj!r:.200}")

    monkeypatch.setattr(Record, "model_validate", classmethod(refuse))
    assert [cls.from_data(data).model_dump_json() for cls, data in samples] == expected


SPOILT = {  # (record, data): hand-written spoilt cache entries, each one thing off
    "verdict: unknown status": (Verdict, {"status": "bogus"}),
    "verdict: negative teardown retries": (Verdict, {"status": "passed", "teardown_retries": -1}),
    "verdict: rank as a string of digits": (Verdict, {"status": "passed", "ranks": [{"rank": "0"}]}),
    "verdict: rank as a float": (Verdict, {"status": "passed", "ranks": [{"rank": 1.0}]}),
    "verdict: rank as a fraction": (Verdict, {"status": "passed", "ranks": [{"rank": 1.5}]}),
    "verdict: ranks not a list": (Verdict, {"status": "passed", "ranks": {"rank": 0}}),
    "verdict: seconds as a string": (Verdict, {"status": "passed", "seconds": "0.4"}),
    "verdict: seconds as an int": (Verdict, {"status": "passed", "seconds": 3}),
    "verdict: seconds as a huge int": (Verdict, {"status": "passed", "seconds": 2**60 + 1}),
    "verdict: cached as 1": (Verdict, {"status": "passed", "cached": 1}),
    "verdict: cached as 'yes'": (Verdict, {"status": "passed", "cached": "yes"}),
    "verdict: world size as a bool": (Verdict, {"status": "passed", "world_size": True}),
    "verdict: reason as a number": (Verdict, {"status": "passed", "reason": 7}),
    "verdict: no status": (Verdict, {"reason": "x"}),
    "verdict: extra key": (Verdict, {"status": "passed", "planted": "rm -rf /"}),
    "verdict: a list": (Verdict, [{"status": "passed"}]),
    "api: missing name": (ApiInfo, {"available": True}),
    "api: available as a string": (ApiInfo, {"name": "x", "available": "true"}),
    "api: signature as a list": (ApiInfo, {"name": "x", "available": True, "signature": ["(a)"]}),
    "api: null": (ApiInfo, None),
    "card: sections not a list": (Card, {"id": "a", "title": "A", "topic": "a", "file": "a.md", "sections": {}}),
    "card: title missing": (Card, {"id": "a", "topic": "a", "file": "a.md"}),
    "card: aliases with a number": (Card, {"id": "a", "title": "A", "topic": "a", "file": "a.md", "aliases": ["x", 3]}),
    "section: line as a string": (SectionDoc, {"id": "a/b", "title": "B", "topic": "a", "card": "a.md", "line": "3", "text": ""}),
    "snippet: timeout as an int": (SnippetSpec, {"id": "a/b", "section_id": "a/b", "code": "", "timeout": 120}),
    "snippet: tolerance as a string": (SnippetSpec, {"id": "a/b", "section_id": "a/b", "code": "", "tolerance": "1e-6"}),
    "snippet: world size as a float": (SnippetSpec, {"id": "a/b", "section_id": "a/b", "code": "", "world_size": 2.0}),
    "snippet: requires null": (SnippetSpec, {"id": "a/b", "section_id": "a/b", "code": "", "requires": None}),
    "error info: unknown kind": (
        ErrorInfo,
        {"message": "m", "kind": "other", "explanation": "e", "how": "template"},
    ),
    "error info: raised_at not an object": (
        ErrorInfo,
        {"message": "m", "kind": "python", "explanation": "e", "how": "template", "raised_at": "torch/x.py"},
    ),
    "report: counts with a string": (CheckReport, {"counts": {"total": "1"}}),
    "report: counts with a float": (CheckReport, {"counts": {"total": 1.0}}),
}


@pytest.mark.parametrize("cls, data", list(SPOILT.values()), ids=list(SPOILT))
def test_spoilt_data_is_accepted_or_refused_as_pydantic_does(cls, data):
    _same_outcome(cls, data)


_POOL = [
    None,
    True,
    False,
    0,
    1,
    -1,
    3,
    2**60,
    1.0,
    2.5,
    float("nan"),
    "",
    "3",
    "passed",
    "python",
    [],
    [0],
    ["x"],
    {},
    {"rank": 0},
]


def _spoil(data: object, rng: random.Random) -> object:
    """``data`` with one value somewhere replaced, one key dropped or one key added."""
    if isinstance(data, dict) and data:
        key = rng.choice(list(data))
        roll = rng.random()
        if roll < 0.15:
            return {k: v for k, v in data.items() if k != key}
        if roll < 0.2:
            return {**data, "extra": rng.choice(_POOL)}
        if roll < 0.6 and isinstance(data[key], (dict, list)) and data[key]:
            return {**data, key: _spoil(data[key], rng)}
        return {**data, key: rng.choice(_POOL)}
    if isinstance(data, list) and data:
        i = rng.randrange(len(data))
        return [*data[:i], _spoil(data[i], rng) if rng.random() < 0.6 else rng.choice(_POOL), *data[i + 1 :]]
    return rng.choice(_POOL)


def test_randomly_spoilt_data_is_accepted_or_refused_as_pydantic_does():
    rng = random.Random(22)
    samples = _exact_samples()
    verdict = Verdict(
        status="failed", seconds=1.0, world_size=2, ranks=[RankResult(rank=0, exit_code=1, signal="SIGKILL")]
    ).model_dump()
    samples.append((Verdict, verdict))
    samples.append(
        (
            ErrorInfo,
            ErrorInfo(message="m", kind="python", explanation="e", how="template", raised_at=RaisedAt(path="p")).model_dump(),
        )
    )
    by_class: dict[type[Record], list[object]] = {}
    for cls, data in samples:
        by_class.setdefault(cls, []).append(data)
    for _ in range(4000):
        cls = rng.choice(sorted(by_class, key=lambda c: c.__name__))
        spoilt = rng.choice(by_class[cls])
        for _ in range(rng.randint(1, 3)):
            spoilt = _spoil(spoilt, rng)
        _same_outcome(cls, spoilt)


# --------------------------------------------------------------------------- model_validate's strictness
_MODELS: dict[type, type[BaseModel]] = {}


def _as_model_type(annotation):
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return _as_model(annotation)
    args = typing.get_args(annotation)
    if not args or typing.get_origin(annotation) is typing.Literal:
        return annotation
    converted = tuple(_as_model_type(a) for a in args)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[converted]  # noqa: UP007  # built from a tuple
    return origin[converted]


def _as_model(cls: type[Record]) -> type[BaseModel]:
    """The BaseModel a record was before: the same fields, defaults and constraints (lax, extra keys ignored)."""
    if cls not in _MODELS:
        hints = typing.get_type_hints(cls)
        fields = {}
        for f in dataclasses.fields(cls):
            kwargs = dict(f.metadata)
            if f.default is not dataclasses.MISSING:
                kwargs["default"] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                kwargs["default_factory"] = f.default_factory
            fields[f.name] = (_as_model_type(hints[f.name]), Field(**kwargs))
        _MODELS[cls] = create_model(f"{cls.__name__}Model", **fields)
    return _MODELS[cls]


def test_model_validate_is_as_strict_as_the_base_model_it_was():
    rng = random.Random(23)
    samples = [*_exact_samples(), *SPOILT.values()]
    for _ in range(1500):
        cls, data = rng.choice(samples)
        data = _spoil(data, rng) if rng.random() < 0.8 else data
        try:
            mine = ("ok", cls.model_validate(data).model_dump())
        except ValidationError:
            mine = ("refused",)
        try:
            theirs = ("ok", _as_model(cls).model_validate(data).model_dump())
        except ValidationError:
            theirs = ("refused",)
        assert mine == theirs, (cls, data)


def test_model_copy_is_shallow_and_checks_names():
    verdict = Verdict(status="passed", ranks=[RankResult(rank=0)])
    copy = verdict.model_copy(update={"cached": True})
    assert copy.cached and not verdict.cached and copy.ranks is verdict.ranks
    with pytest.raises(TypeError):
        verdict.model_copy(update={"not_a_field": 1})


def test_schemas_validate_what_the_records_write():
    verdict = Verdict(status="passed", seconds=0.5, ranks=[RankResult(rank=0)], teardown_retries=1)
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict
    assert Verdict.from_json(verdict.model_dump_json(indent=1)) == verdict
    assert Verdict.model_json_schema()["properties"]["teardown_retries"]["minimum"] == 0
    seconds = Verdict.from_data({"status": "failed", "seconds": 1}).seconds
    assert seconds == 1.0 and type(seconds) is float  # an int becomes the equal float, as pydantic makes it
