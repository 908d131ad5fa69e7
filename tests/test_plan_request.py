"""The one plan request model (skill/core/plan/request.py): every door (CLI, HTTP, MCP, function calls) builds
the same request from the same plan, its command line round-trips through the CLI parser, its limits and
strictness hold at every door, and the planner's child (a file-run module that cannot import the model) reads
only keys the request writes.  Nothing here runs the planner: the doors are stopped where they hand the
request to the core."""

from __future__ import annotations

import ast
import asyncio
import json
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import ValidationError

from fsdp_skill.adapters.cli.plan import request_from_args
from fsdp_skill.core.plan import report as plan_report
from fsdp_skill.core.plan.request import (
    MAX_SERVED_WORK,
    SERVED_TIMEOUT_S,
    LocalPlanRequest,
    PlanKnobs,
    PlanRequest,
    served_work,
)
from fsdp_skill.core.plan.runner import CHILD
from fsdp_skill.core.plan.spec import MAX_WORLD_SIZE, Setting, TransformerSpec, format_size, parse_bytes
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.main import build_parser, main
from fsdp_skill.runtime.api import MAX_TIMEOUT_S

SMALL = "layers=2,dim=64,heads=4,kv_heads=2,ffn=128,vocab=256"
SMALL_OBJECT = {"layers": 2, "dim": 64, "heads": 4, "kv_heads": 2, "ffn": 128, "vocab": 256}


def cli_request(argv: list[str]) -> LocalPlanRequest:
    """The request ``fsdp-skill plan ARGV`` builds (the real parser and the real conversion)."""
    return request_from_args(build_parser().parse_args(["plan", *argv]))


@contextmanager
def _handed() -> Iterator[list[PlanKnobs]]:
    """While open, the request a door hands to the core's ``prepare_plan`` (the CLI's ``plan_request`` and the
    served doors' plan queue both start there) is recorded and the call ends there (InvalidArgument 'handed
    over': HTTP 400, an MCP tool error), so nothing is planned."""
    got: list[PlanKnobs] = []

    def record(request: PlanKnobs, **kwargs: object) -> None:
        got.append(request)
        raise InvalidArgument("handed over")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plan_report, "prepare_plan", record)
        yield got


def _through_http(body: dict) -> PlanKnobs:
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app

    with _handed() as got, TestClient(create_app()) as client:
        r = client.post("/v1/plan", json=body)
    assert r.status_code == 400 and r.json()["error"] == "handed over", r.json()
    return got[0]


def _through_mcp(arguments: dict) -> PlanKnobs:
    from mcp import Client

    from fsdp_skill.adapters.mcp.server import build_server

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool("plan_memory", arguments)

    with _handed() as got:
        res = asyncio.run(go())
    assert res.is_error and "handed over" in res.content[0].text, res.content[0].text
    return got[0]


def _through_function_call(arguments: dict) -> PlanKnobs:
    from fsdp_skill.adapters.tools import invoke

    with _handed() as got, pytest.raises(InvalidArgument, match="handed over"):
        invoke("plan_memory", json.dumps(arguments))
    return got[0]


# (CLI options, the HTTP body / MCP arguments of the same plan)
SAME_PLAN = [
    (["--transformer", SMALL], {"transformer": SMALL}),
    (
        ["--transformer", SMALL, "--mesh", "2x4", "--seq", "64", "--param-dtype", "none", "--reshard-after-forward", "2"]
        + ["--gpu-memory", "80GiB", "--sweep", "ac=none,per-block"],
        {
            "transformer": SMALL_OBJECT,
            "mesh": "2x4",
            "seq": 64,
            "param_dtype": "none",
            "reshard_after_forward": 2,
            "gpu_memory_gib": 80,
            "sweep": ["ac=none,per-block"],
        },
    ),
    (
        ["--transformer", SMALL, "--world-size", "16", "--batch", "2", "--optimizer", "sgd", "--cpu-offload"]
        + ["--reduce-dtype", "bf16", "--reshard-after-forward", "false", "--gpu-memory", "80GB"]
        + ["--activation-checkpointing", "per-block"],
        {
            "transformer": SMALL,
            "world_size": 16,
            "batch": 2,
            "optimizer": "sgd",
            "cpu_offload": True,
            "reduce_dtype": "bf16",
            "reshard_after_forward": "false",
            "gpu_memory_gib": 80e9 / 2**30,
            "activation_checkpointing": "per-block",
        },
    ),
]


@pytest.mark.parametrize("argv, body", SAME_PLAN, ids=["defaults", "hsdp-object-sweep", "offload-sgd-GB"])
def test_every_door_builds_the_same_request(argv, body):
    """CLI options, an HTTP body, MCP arguments and a function call of the same plan: equal settings, model,
    GPU memory and command line, each taken from the request the door handed to the core."""
    cli = cli_request(argv)
    doors = {"http": _through_http(body), "mcp": _through_mcp(body), "function call": _through_function_call(body)}
    for door, request in doors.items():
        assert type(request) is PlanRequest, door
        assert request.settings() == cli.settings(), door
        assert request.models() == cli.models(), door
        assert request.gpu_bytes() == cli.gpu_bytes(), door
        assert request.command_line() == cli.command_line(), door
        assert request.timeout_s() == SERVED_TIMEOUT_S
    assert cli.timeout_s() == 600


def test_the_mcp_door_keeps_what_was_given():
    """A mesh alone is not 'world_size and mesh' (the MCP adapter rebuilt the request from every field's value,
    so world_size read as given and every HSDP plan_memory call was refused)."""
    request = _through_mcp({"transformer": SMALL, "mesh": "2x2"})
    assert [s.mesh for s in request.settings()] == [[2, 2]]
    assert _through_mcp({"transformer": SMALL}).model_fields_set == {"transformer"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--transformer", SMALL],
        ["--transformer", SMALL, "--mesh", "2x4", "--batch", "3", "--seq", "128", "--param-dtype", "fp32"]
        + ["--reduce-dtype", "none", "--optimizer", "adam", "--reshard-after-forward", "4", "--gpu-memory", "24GiB"],
        ["--transformer", SMALL, "--world-size", "64", "--cpu-offload", "--gpu-memory", "80GB", "--timeout", "120"],
        ["--model", "net.py:make", "--input", "net.py:inputs", "--world-size", "2", "--gpu-memory", "0.001GiB"],
        ["--model", "pkg.mod:build", "--activation-checkpointing", "per-block", "--timeout", "0.5"],
        ["--transformer", SMALL, "--activation-checkpointing", "selective-op"],
        ["--transformer", SMALL, "--activation-checkpointing", "selective-3", "--world-size", "4"],
        ["--transformer", SMALL, "--embedding-groups", "--world-size", "4"],
    ],
    ids=["defaults", "hsdp-every-knob", "offload-GB-timeout", "factory-input", "module-factory", "sac-op", "sac-3", "emb"],
)
def test_the_command_line_round_trips_through_the_cli_parser(argv):
    request = cli_request(argv)
    line = request.command_line()
    assert line.startswith("fsdp-skill plan ")
    again = cli_request(shlex.split(line)[2:])
    assert again == request, line
    assert again.settings() == request.settings() and again.command_line() == line


def test_a_sweep_s_command_line_is_its_first_setting():
    request = cli_request(["--transformer", SMALL, "--sweep", "world-size=4,8", "--sweep", "reshard=false,2"])
    again = cli_request(shlex.split(request.command_line())[2:])
    assert again.settings() == request.settings()[:1] and again.sweep == []


def test_ask_s_plan_commands_are_requests_the_cli_takes():
    """The commands ask prints for fit questions (plan/hint.py writes them as text) parse into valid requests."""
    from fsdp_skill.core.plan.hint import PRESETS, plan_command

    questions = [f"Will a {b:g}B model fit on 8 GPUs with FSDP?" for b in PRESETS] + ["用4张4090微调7B，显存够吗"]
    for question in questions:
        line = plan_command(question)
        assert line, question
        request = cli_request(shlex.split(line)[2:])
        assert request.settings() and request.models()[0] is not None and request.gpu_bytes()


def test_sizes_are_written_so_they_read_back_exactly():
    for n in (80 * 2**30, 80 * 10**9, 1073741, 24576 * 2**20, 3 * 2**40, 123456789, 1):
        assert parse_bytes(format_size(n)) == n, (n, format_size(n))
    assert [format_size(n) for n in (80 * 2**30, 80 * 10**9, 1073741, 1536 * 2**30)] == ["80GiB", "80GB", "1.024MiB", "1536GiB"]


def test_the_schema_http_and_mcp_publish_names_no_code():
    """Over HTTP and MCP a request cannot name a factory, an input factory or a timeout: the fields are not in the
    schema and refused when sent; the CLI's request has them."""
    props = PlanRequest.model_json_schema()["properties"]
    assert {"model", "input", "timeout"}.isdisjoint(props) and PlanRequest.model_json_schema()["required"] == ["transformer"]
    for field, value in (("model", "evil.py:f"), ("input", "evil.py:g"), ("timeout", 10)):
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            PlanRequest.model_validate({"transformer": SMALL, field: value})
    assert LocalPlanRequest.model_validate({"model": "net.py:make", "input": "net.py:inputs", "timeout": 10}).models() == (
        None,
        "net.py:make",
        "net.py:inputs",
    )
    with pytest.raises(TypeError):
        PlanKnobs()  # not a request by itself: a request says its model


@pytest.mark.parametrize(
    "body",
    [
        {"world_size": "8"},
        {"world_size": 8.0},
        {"world_size": True},
        {"batch": "2"},
        {"cpu_offload": "true"},
        {"cpu_offload": 1},
        {"gpu_memory_gib": "80"},
        {"sweep": "ac=none,per-block"},
        {"reshard_after_forward": 2.0},
        {"reshard_after_forward": "12345678901"},  # the text form keeps its 10-character cap
        {"transformer": {**SMALL_OBJECT, "layers": "2"}},
        {"transformer": {**SMALL_OBJECT, "layers": True}},
        {"transformer": "x" * 201},
        {"param_dtype": None},
        {"world_size": MAX_WORLD_SIZE + 1},
        {"sweep": ["batch=1", "seq=64", "ac=none", "reshard=true", "optimizer=sgd"]},
    ],
    ids=lambda b: json.dumps(b)[:40],
)
def test_wrong_json_types_and_values_over_a_limit_are_refused(body):
    with pytest.raises(ValidationError):
        PlanRequest.model_validate_json(json.dumps({"transformer": SMALL, **body}))


def test_what_the_schema_cannot_say_is_told_when_the_request_is_read():
    with pytest.raises(InvalidArgument, match="not both"):
        PlanRequest(transformer=SMALL, world_size=4, mesh="2x2").settings()
    with pytest.raises(InvalidArgument, match=r"reshard_after_forward\(12345678908\)"):  # an int is read whole
        PlanRequest(transformer=SMALL, reshard_after_forward=12345678908).settings()
    with pytest.raises(InvalidArgument, match=r"world_size\(65792\) is over 65536"):
        PlanRequest(transformer=SMALL, mesh="256x257").settings()
    with pytest.raises(InvalidArgument, match="gives layers twice"):
        PlanRequest(transformer=SMALL + ",layers=80").models()
    with pytest.raises(InvalidArgument, match=r"dim\(66\) is not a multiple of heads\(4\)"):
        PlanRequest(transformer=TransformerSpec(**{**SMALL_OBJECT, "dim": 66})).models()
    assert LocalPlanRequest(transformer=SMALL, world_size=MAX_WORLD_SIZE).settings()[0].world_size == MAX_WORLD_SIZE


def test_a_served_plan_is_bounded_by_its_size_and_a_cli_plan_is_not():
    """(layers + 2) x (world_size + 128), summed over the rows, is at most MAX_SERVED_WORK for a plan asked over
    HTTP or MCP (PlanRequest); the message gives the numbers and the CLI line that plans it locally."""
    assert MAX_SERVED_WORK == 16_384  # SMALL (2 layers): 4 x (3968 + 128) is exactly the bound
    assert PlanRequest(transformer=SMALL, world_size=3968).settings()[0].world_size == 3968
    with pytest.raises(InvalidArgument, match=r"\(layers\(2\) \+ 2\) x \(world_size\(3969\) \+ 128 per row\) = 16,388 > 16,384"):
        PlanRequest(transformer=SMALL, world_size=3969).settings()
    with pytest.raises(InvalidArgument, match="plan too large to serve") as big:
        PlanRequest(transformer=SMALL, world_size=MAX_WORLD_SIZE).settings()
    assert f"fsdp-skill plan --transformer {SMALL} --world-size {MAX_WORLD_SIZE} " in str(big.value)
    assert len(LocalPlanRequest(transformer=SMALL, world_size=MAX_WORLD_SIZE).settings()) == 1  # the CLI's own machine
    deep = SMALL.replace("layers=2", "layers=1024")  # the schema's most layers, at a small world size
    with pytest.raises(InvalidArgument, match=r"\(layers\(1024\) \+ 2\) x \(world_size\(8\) \+ 128 per row\) = 139,536"):
        PlanRequest(transformer=deep).settings()
    sweep = ["world-size=1024,1024,1024,1024,1024"]  # each row is within the bound, the five together are not
    assert PlanRequest(transformer=SMALL, world_size=1024).settings()
    with pytest.raises(InvalidArgument, match=r"world_size\(1024\+1024\+1024\+1024\+\.\.\.\) \+ 128 per row\) = 23,040"):
        PlanRequest(transformer=SMALL, sweep=sweep).settings()
    assert served_work(TransformerSpec(**SMALL_OBJECT), LocalPlanRequest(transformer=SMALL, sweep=sweep).settings()) == 23_040


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--world-size", "0"], "--world-size: Input should be greater than or equal to 1"),
        (["--world-size", str(MAX_WORLD_SIZE + 1)], f"--world-size: Input should be less than or equal to {MAX_WORLD_SIZE}"),
        (["--timeout", "0"], "--timeout: Input should be greater than 0"),
        (["--timeout", str(MAX_TIMEOUT_S + 1)], f"--timeout: Input should be less than or equal to {MAX_TIMEOUT_S:g}"),
        (["--reshard-after-forward", "12345678901"], "reshard_after_forward(12345678901) must be a positive divisor"),
        (["--reshard-after-forward", "maybe"], "reshard_after_forward 'maybe' is not true, false or a positive integer"),
        (["--param-dtype", "fp8"], "--param-dtype: Input should be 'fp32', 'bf16', 'fp16' or 'none'"),
        (["--gpu-memory", "5TiB"], "--gpu-memory: Input should be less than or equal to 4096"),
        (["--sweep", "a=1"] * 5, "--sweep: List should have at most 4 items"),
        (["--model", "net.py:make"], "give exactly one model"),
        (["--activation-checkpointing", "selective-0"], "is not none, per-block, selective-op or selective-N"),
        (["--sweep", "ac=none,sometimes"], "'sometimes' is not none, per-block, selective-op or selective-N"),
    ],
    ids=["ws-0", "ws-over", "timeout-0", "timeout-over-a-day", "reshard-long", "reshard-text", "dtype", "gpu", "sweep", "two"]
    + ["ac-0", "ac-sweep"],
)
def test_the_cli_names_the_option_in_one_line(argv, message, capsys):
    assert main(["plan", "--transformer", SMALL, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_the_timeout_cap_is_the_runtime_s():
    assert cli_request(["--transformer", SMALL, "--timeout", str(MAX_TIMEOUT_S)]).timeout_s() == MAX_TIMEOUT_S


def test_cli_help_is_the_model_s(capsys):
    """The knob options' help, defaults and choices come from the request model (nothing is written twice)."""
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    fields = LocalPlanRequest.model_fields
    for name in ("world_size", "batch", "seq", "optimizer", "activation_checkpointing", "timeout", "model", "input"):
        assert " ".join(fields[name].description.split()) in out, name
    assert "(default 8)" in out and "(default 2048)" in out and "(default 600)" in out and "(default true)" in out
    assert "--optimizer {adamw,adam,sgd}" in out and "--param-dtype {fp32,bf16,fp16,none}" in out


def test_a_default_request_plans_a_default_setting():
    """The defaults a request shares with a Setting are the Setting's (one request, one row: Setting(mesh=[8]))."""
    assert PlanRequest(transformer=SMALL).settings() == [Setting(mesh=[8])]
    assert cli_request(["--transformer", SMALL]).settings() == [Setting(mesh=[8])]


# --------------------------------------------------------------------------- the planner's child reads the request's keys
def _child_reads() -> dict[str, set[str]]:
    """Every constant key child.py reads, by document: ``setting["x"]`` / ``setting.get("x")`` (a Setting),
    ``spec[...]`` (the request's model), ``request[...]`` (the whole document), ``spec["transformer"][...]``."""
    tree = ast.parse(Path(CHILD).read_text(encoding="utf-8"))
    reads: dict[str, set[str]] = {"setting": set(), "spec": set(), "request": set(), "transformer": set()}

    def document(node: ast.AST) -> str | None:
        if isinstance(node, ast.Name) and node.id in ("setting", "spec", "request"):
            return node.id
        return "transformer" if key(node) == ("spec", "transformer") else None

    def key(node: ast.AST) -> tuple[str, str] | None:
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            doc = document(node.value)
            return (doc, node.slice.value) if doc else None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            doc = document(node.func.value)
            return (doc, node.args[0].value) if doc else None
        return None

    for node in ast.walk(tree):
        found = key(node)
        if found:
            reads[found[0]].add(found[1])
    return reads


def test_the_child_reads_exactly_what_the_request_writes():
    """child.py runs under the user's interpreter and cannot import the model: a knob renamed in Setting, or one
    the child does not read (it would plan nothing), fails here."""
    reads = _child_reads()
    settings = [Setting(mesh=[2, 4])]
    built_in = plan_report.child_request(settings, TransformerSpec(**SMALL_OBJECT), None, None)
    factory = plan_report.child_request(settings, None, "net.py:make", "net.py:inputs")
    assert reads["setting"] == set(Setting.model_fields) == set(built_in["settings"][0])
    assert reads["request"] == set(built_in) == set(factory)
    assert reads["spec"] == set(built_in["model"]) | set(factory["model"])
    assert reads["transformer"] and reads["transformer"] <= set(TransformerSpec.model_fields)


def test_the_built_in_transformer_takes_the_spec_s_fields():
    """The child builds ``Transformer(**spec["transformer"])`` (transformer.py, a file-run module)."""
    source = Path(CHILD).with_name("transformer.py").read_text(encoding="utf-8")
    (init,) = [
        f
        for c in ast.parse(source).body
        if isinstance(c, ast.ClassDef) and c.name == "Transformer"
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    ]
    assert [a.arg for a in init.args.args[1:]] == list(TransformerSpec.model_fields)
