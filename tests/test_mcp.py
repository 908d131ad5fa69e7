"""MCP adapter through the SDK's own clients (in-process, both the direct and the JSON-RPC stream paths, and
`fsdp-skill mcp` over stdio as an agent client launches it), plus `fsdp-skill tools` schemas."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from fsdp_skill.adapters.mcp.server import build_server
from fsdp_skill.adapters.tools import function_schemas, invoke, parameters_schema
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.knowledge.catalogue import Catalogue
from fsdp_skill.core.models import Answer, SectionOut
from fsdp_skill.core.toolspec import tool_specs
from fsdp_skill.core.verify.export import split_script
from fsdp_skill.core.verify.snippets import SnippetInfo
from fsdp_skill.errors import InvalidArgument, NotFoundError, QueryError
from fsdp_skill.main import main

EXE = Path(sys.executable).with_name("fsdp-skill")
TOOLS = {"ask", "check_script", "get_section", "list_sections", "verify_snippet", "export_snippet", "plan_memory"}
SCRIPT_TOOLS = {"verify_script", "read_run_file"}  # only with a script dir (mcp --allow-run-scripts)
# The README's MCP client configuration; test_stdio_server_from_readme_config launches exactly this.
README_MCP_CONFIG = {"mcpServers": {"fsdp-skill": {"command": "fsdp-skill", "args": ["mcp"]}}}
TERMS = [
    "FSDP",
    "fully_shard",
    "分片",
    "混合精度",
    "卸载",
    "FSDP2",
    "不均匀输入",
    "后端",
    "init_process_group",
    "初始化",
    "检查点",
]


@pytest.fixture(scope="module")
def kb():
    return load_knowledge()


def run(coro_fn, mode="auto", verifier=None):
    async def go():
        async with Client(build_server(verifier), mode=mode) as client:
            return await coro_fn(client)

    return asyncio.run(go())


def _props(schema):
    return {k: {kk: vv for kk, vv in v.items() if kk != "title"} for k, v in schema["properties"].items()}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_list_tools(mode):
    async def body(c):
        return (await c.list_tools()).tools

    tools = {t.name: t for t in run(body, mode)}
    assert set(tools) == TOOLS
    specs = {s.name: s for s in tool_specs()}
    for name, tool in tools.items():
        assert tool.description == specs[name].description
        # inputs: the same pydantic model as `fsdp-skill tools` prints
        assert _props(tool.input_schema) == _props(parameters_schema(specs[name].input))
        assert set(tool.input_schema.get("required", [])) == set(parameters_schema(specs[name].input).get("required", []))
        assert all(p.get("description") for p in tool.input_schema["properties"].values())
        # outputs: the pydantic output model
        assert tool.output_schema["title"] == specs[name].output.__name__
    assert tools["ask"].output_schema["title"] == "Answer"
    everything = " ".join(t.description for t in tools.values())
    for term in TERMS:
        assert term in everything, term
    for term in ["FSDP", "分片", "混合精度", "卸载", "不均匀输入", "后端", "初始化", "检查点"]:
        assert term in tools["ask"].description, term


def test_call_ask(kb):
    async def body(c):
        return await c.call_tool(
            "ask", {"question": "How do I use bf16 mixed precision with fully_shard?", "k": 2, "verify": False}
        )

    res = run(body)
    assert not res.is_error
    ans = Answer.model_validate(res.structured_content)
    assert not ans.abstained and len(ans.sections) == 2 and ans.sections[0].topic == "mixed-precision"
    assert all(sn.verification.status == "unverified" for s in ans.sections for sn in s.snippets)
    assert json.loads(res.content[0].text) == res.structured_content


def test_call_ask_chinese():
    async def body(c):
        return await c.call_tool("ask", {"question": "不均匀输入怎么处理？", "verify": False})

    ans = Answer.model_validate(run(body).structured_content)
    assert ans.language == "zh" and ans.sections and ans.sections[0].zh and ans.sections[0].text_zh


def test_call_ask_language_argument():
    async def body(c):
        return await c.call_tool("ask", {"question": "Join uneven inputs", "verify": False, "language": "zh"})

    ans = Answer.model_validate(run(body).structured_content)
    assert ans.language == "zh" and all(s.text and s.text_zh for s in ans.sections)


def test_call_get_section(kb):
    sec = next(s for s in kb.sections.values() if s.snippets)

    async def body(c):
        return await c.call_tool("get_section", {"id": sec.id})

    res = run(body, mode="legacy")
    assert not res.is_error
    out = SectionOut.model_validate(res.structured_content)
    assert out.id == sec.id and out.text == sec.text and [s.id for s in out.snippets] == [s.id for s in sec.snippets]
    assert all(s.verification.status == "unverified" for s in out.snippets)


@pytest.mark.parametrize(
    "tool, args, message",
    [
        ("ask", {"question": ""}, "the question is empty"),
        ("ask", {"question": "   "}, "the question is empty"),
        ("ask", {"question": "fsdp " * 8000}, "the limit is 32,768"),
        ("ask", {"question": "fsdp", "k": 0}, "greater than or equal to 1"),
        ("ask", {"question": "fsdp", "k": "abc"}, "valid integer"),
        ("ask", {}, "question"),
        ("get_section", {"id": "join/no-such"}, "unknown section id 'join/no-such'"),
        ("verify_snippet", {"id": "join/no-such"}, "unknown snippet id 'join/no-such'"),
        ("export_snippet", {"id": "join/no-such"}, "unknown snippet id 'join/no-such'"),
    ],
    ids=[
        "empty",
        "whitespace",
        "40 kB",
        "k=0",
        "k=abc",
        "no question",
        "unknown section",
        "unknown snippet",
        "export unknown snippet",
    ],
)
def test_tool_errors(tool, args, message):
    async def body(c):
        return await c.call_tool(tool, args)

    res = run(body)
    assert res.is_error and res.structured_content is None
    assert message in res.content[0].text


def test_export_snippet_tool(kb, fake_verifier):
    spec = next(s for s in kb.snippets.values() if not s.requires)
    sha = hashlib.sha256(spec.code.encode()).hexdigest()
    fake_verifier.status[spec.id] = "failed"

    async def body(c):
        return await c.call_tool("export_snippet", {"id": spec.id})

    res = run(body, verifier=fake_verifier)
    assert res.is_error and "refusing to export" in res.content[0].text and spec.id in res.content[0].text
    fake_verifier.status[spec.id] = "passed"
    fake_verifier.cache.clear()
    res = run(body, verifier=fake_verifier)
    assert not res.is_error
    sc = res.structured_content
    assert sc["verified"] and sc["filename"] == spec.filename and split_script(sc["script"])[1] == spec.code
    assert sc["code_sha256"] == sha


@pytest.mark.slow
def test_real_verify_snippet_tool(kb):
    spec = min((s for s in kb.snippets.values() if not s.requires), key=lambda s: len(s.code))

    async def body(c):
        return await c.call_tool("verify_snippet", {"id": spec.id})

    res = run(body)
    assert not res.is_error, res.content
    info = SnippetInfo.model_validate(res.structured_content)
    assert info.id == spec.id and info.code == spec.code
    assert info.verification.status == "passed", info.verification
    assert info.verification.backend == "gloo" and info.verification.world_size == spec.world_size
    assert info.verification.code_sha256 == info.code_sha256


@pytest.mark.slow
def test_stdio_server_from_readme_config(tmp_path):
    cfg = README_MCP_CONFIG["mcpServers"]["fsdp-skill"]
    params = StdioServerParameters(
        command=str(EXE.with_name(cfg["command"])), args=cfg["args"], env={"FSDP_SKILL_HOME": str(tmp_path / "home")}
    )

    spec = min((s for s in load_knowledge().snippets.values() if not s.requires), key=lambda s: len(s.code))

    async def go():
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            res = await client.call_tool("ask", {"question": "Join uneven inputs with DDP", "k": 1, "verify": False})
            # a real run inside the stdio server: the ranks' output must not corrupt the protocol stream
            ver = await client.call_tool("verify_snippet", {"id": spec.id})
            return tools, res, ver

    tools, res, ver = asyncio.run(go())
    assert tools == TOOLS
    assert not res.is_error and Answer.model_validate(res.structured_content).sections[0].topic == "join"
    assert not ver.is_error and SnippetInfo.model_validate(ver.structured_content).verification.status == "passed"


# --------------------------------------------------------------------------- function-call schemas
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_tools_cli_prints_valid_schemas(fmt, capsys):
    assert main(["tools", "--format", fmt]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert tools == function_schemas(fmt)
    fns = [t["function"] for t in tools] if fmt == "openai" else tools
    if fmt == "openai":
        assert all(t["type"] == "function" for t in tools)
    assert {f["name"] for f in fns} == TOOLS
    for f in fns:
        params = f["parameters"] if fmt == "openai" else f["input_schema"]
        assert params["type"] == "object" and params["properties"] and params["additionalProperties"] is False
        assert set(params.get("required", [])) <= set(params["properties"])
        assert all(p.get("description") and "type" in p for p in params["properties"].values())
        assert f["description"]
    ask = next(f for f in fns if f["name"] == "ask")
    params = ask["parameters"] if fmt == "openai" else ask["input_schema"]
    assert params["required"] == ["question"]
    assert params["properties"]["k"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 20,
        "default": 3,
        "description": params["properties"]["k"]["description"],
    }


def test_tools_cli_rejects_unknown_format(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tools", "--format", "xml"])
    assert exc.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err


def test_invoke_runs_a_function_call():
    ans = invoke("ask", '{"question": "Join uneven inputs with DDP", "k": 1, "verify": false}')
    assert isinstance(ans, Answer) and ans.sections[0].topic == "join"
    with pytest.raises(NotFoundError, match="unknown tool"):
        invoke("run_code", {"code": "print(1)"})
    with pytest.raises(InvalidArgument, match="invalid arguments"):
        invoke("ask", {"question": "fsdp", "k": "abc"})
    with pytest.raises(InvalidArgument, match="invalid arguments"):
        invoke("ask", {"question": "fsdp", "code": "import os"})
    with pytest.raises(QueryError, match="the question is empty"):
        invoke("ask", {"question": " "})


@pytest.mark.torch
def test_call_ask_carries_located_errors(kb):
    q = "RuntimeError: use_libuv was requested but PyTorch was built without libuv support, run with USE_LIBUV=0 to disable it."

    async def body(c):
        return await c.call_tool("ask", {"question": q, "k": 2, "verify": False})

    ans = Answer.model_validate(run(body).structured_content)
    assert ans.errors and ans.errors[0].kind == "native" and "launch/windows-libuv" in ans.errors[0].sections


def test_ask_with_a_lone_surrogate_is_a_tool_error(kb):
    async def body(c):
        return await c.call_tool("ask", {"question": "how to shard with fsdp \ud800", "verify": False})

    res = run(body)
    assert res.is_error and "surrogate" in res.content[0].text


# --------------------------------------------------------------------------- listing, annotations, strict arguments
def test_list_sections_tool_matches_show_list(capsys):
    async def body(c):
        return (
            await c.call_tool("list_sections", {"topic": ["join"]}),
            await c.call_tool("list_sections", {}),
            await c.call_tool("list_sections", {"topic": ["joinn"]}),
        )

    join, everything, unknown = run(body)
    assert not join.is_error and not everything.is_error
    cat = Catalogue.model_validate(join.structured_content)
    kb = load_knowledge()
    assert cat.topics == kb.topics and {s.topic for s in cat.sections} == {"join"}
    assert [s.id for s in cat.sections] == [s.id for s in kb.sections.values() if s.topic == "join"]
    assert len(Catalogue.model_validate(everything.structured_content).sections) == len(kb.sections)
    assert unknown.is_error and "unknown topic 'joinn'" in unknown.content[0].text
    # the same rows as `fsdp-skill show --list --snippets --json --topic join` and `show --list --json`
    assert main(["show", "--list", "--snippets", "--json", "--topic", "join"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and [r["id"] for r in rows] == [sp.id for s in cat.sections for sp in s.snippets]
    assert [r["section"] for r in rows] == [s.id for s in cat.sections for _ in s.snippets]
    assert main(["show", "--list", "--json", "--topic", "join"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["title"], r["snippets"]) for r in rows] == [(s.id, s.title, len(s.snippets)) for s in cat.sections]


def test_tool_annotations(tmp_path):
    async def body(c):
        return {t.name: t.annotations for t in (await c.list_tools()).tools}

    async def go():
        async with Client(build_server(script_dir=str(tmp_path))) as client:
            return await body(client)

    ann = asyncio.run(go())
    for name in ("ask", "check_script", "get_section", "list_sections"):
        assert ann[name].read_only_hint is True and ann[name].open_world_hint is False, name
    for name in ("verify_snippet", "export_snippet"):
        a = ann[name]
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint) == (False, False, True, False)
    a = ann["verify_script"]
    assert (a.read_only_hint, a.idempotent_hint, a.open_world_hint) == (False, False, False)
    assert a.destructive_hint is True  # it overwrites its file and runs code that may write anywhere
    assert ann["read_run_file"].read_only_hint is True and ann["read_run_file"].open_world_hint is False


@pytest.mark.parametrize(
    "tool, args, message",
    [
        ("ask", {"question": "fsdp", "k": "3", "verify": False}, "valid integer"),
        ("ask", {"question": "fsdp", "k": 3.0, "verify": False}, "valid integer"),
        ("ask", {"question": "fsdp", "verify": "false"}, "valid boolean"),
        ("ask", {"question": "fsdp", "verify": False, "code": "import os"}, "Extra inputs are not permitted"),
        ("ask", {"question": 42}, "valid string"),
        ("get_section", {"id": "join/ddp-join", "verbose": True}, "Extra inputs are not permitted"),
        ("list_sections", {"topic": "join"}, "valid list"),
        ("list_sections", {"topic": '["join"]'}, "valid list"),
        ("export_snippet", {"id": "join/ddp-join", "include_unverified": 1}, "valid boolean"),
        ("check_script", {"code": "x = 1", "select": "FSD0"}, "valid list"),
        ("check_script", {"code": "x = 1", "run": True}, "Extra inputs are not permitted"),
        ("check_script", {"path": "a.py"}, "Field required"),
        ("check_script", {"code": ""}, "at least 1 character"),
    ],
    ids=[
        "k str",
        "k float",
        "verify str",
        "unknown field",
        "question int",
        "get unknown field",
        "topic str",
        "topic json str",
        "include_unverified int",
        "check select str",
        "check unknown field",
        "check no code",
        "check empty code",
    ],
)
def test_arguments_are_strict(tool, args, message, fake_verifier):
    async def body(c):
        return await c.call_tool(tool, args)

    res = run(body, verifier=fake_verifier)
    assert res.is_error and message in res.content[0].text, res.content[0].text
    assert fake_verifier.runs == []


CHECK_DATA = Path(__file__).resolve().parent / "data" / "check"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_check_script_tool(mode, fake_verifier):
    from fsdp_skill.core.check import CheckReport, check_source

    code = (CHECK_DATA / "FSD001_bad.py").read_text(encoding="utf-8")

    async def body(c):
        return (
            await c.call_tool("check_script", {"code": code, "path": "train.py"}),
            await c.call_tool("check_script", {"code": code, "ignore": ["FSD001"]}),
            await c.call_tool("check_script", {"code": code, "select": ["E501"]}),
        )

    found, ignored, bad = run(body, mode, verifier=fake_verifier)
    assert not found.is_error
    rep = CheckReport.model_validate(found.structured_content)
    assert rep.findings == check_source(code, "train.py") and rep.counts["error"] == rep.counts["total"] == 2
    assert CheckReport.model_validate(ignored.structured_content).counts["total"] == 0
    assert bad.is_error and "unknown rule code 'E501'" in bad.content[0].text
    assert fake_verifier.runs == []


def test_check_script_through_function_calls():
    rep = invoke("check_script", {"code": (CHECK_DATA / "FSD001_bad.py").read_text(encoding="utf-8")})
    assert [f.code for f in rep.findings] == ["FSD001", "FSD001"] and rep.findings[0].path == "script.py"
    (fn,) = [f for f in function_schemas("anthropic") if f["name"] == "check_script"]
    assert fn["input_schema"]["required"] == ["code"] and "before running it" in fn["description"]


def test_input_schema_forbids_extra_fields():
    async def body(c):
        return (await c.list_tools()).tools

    for tool in run(body):
        assert tool.input_schema.get("additionalProperties") is False, tool.name


# --------------------------------------------------------------------------- verify_script (flag only)
class RecordingVerifier:
    """Records each job it is given and runs it by executing nothing: the verdict passes."""

    def __init__(self, fake):
        self.fake, self.jobs = fake, []

    def cached(self, job):
        return None

    def run(self, jobs, *, launcher="warm", use_cache=True, progress=None):
        self.jobs.extend((job, launcher) for job in jobs)
        return self.fake.run(jobs, launcher=launcher, use_cache=use_cache, progress=progress)


def test_verify_script_exists_only_with_a_script_dir(tmp_path):
    async def names(server):
        async with Client(server) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert asyncio.run(names(build_server())) == TOOLS
    assert asyncio.run(names(build_server(script_dir=str(tmp_path)))) == TOOLS | SCRIPT_TOOLS
    assert not SCRIPT_TOOLS & {f["function"]["name"] for f in function_schemas("openai")}
    with pytest.raises(NotFoundError):
        invoke("verify_script", {"code": "print(1)"})
    with pytest.raises(NotFoundError):
        invoke("read_run_file", {"path": "script.py"})
    from fsdp_skill.adapters.http.app import create_app  # never over HTTP: no route takes code or a script

    spec = json.dumps(create_app().openapi())
    for name in ("verify_script", "VerifyScriptInput", "ScriptRun", "read_run_file", "ReadRunFileInput", "RunFileContent"):
        assert name not in spec, name


def test_verify_script_job_is_the_verify_cli_job(tmp_path, fake_verifier):
    rec = RecordingVerifier(fake_verifier)

    async def go():
        async with Client(build_server(rec, script_dir=str(tmp_path))) as client:
            ok = await client.call_tool(
                "verify_script",
                {
                    "code": "print('hi')\n",
                    "filename": "train.py",
                    "args": ["--epochs", "1"],
                    "env": {"SEED": "3"},
                    "world_size": 3,
                    "timeout": 20,
                    "launcher": "torchrun",
                    "workdir": "run-a",
                },
            )
            bad = [
                await client.call_tool("verify_script", {"code": "x", **extra})
                for extra in (
                    {"workdir": "../up"},
                    {"filename": "a/b.py"},
                    {"filename": "notes.txt"},
                    {"world_size": 0},
                    {"timeout": 0},
                    {"launcher": "ssh"},
                    {"args": "--epochs 1"},
                    {"env": {"A": 1}},
                    {"cwd": "/"},
                )
            ]
            return ok, bad

    ok, bad = asyncio.run(go())
    assert not ok.is_error, ok.content
    ((job, launcher),) = rec.jobs
    where = tmp_path / "run-a"
    assert launcher == "torchrun" and job.path == str(where / "train.py") and job.cwd == str(where)
    assert (where / "train.py").read_text() == "print('hi')\n" and job.code == "print('hi')\n"
    home = str(tmp_path / ".home")  # the session's own HOME, beside the agent's variables
    assert list(job.args) == ["--epochs", "1"] and dict(job.env)["SEED"] == "3" and dict(job.env)["HOME"] == home
    assert job.world_size == 3 and job.timeout == 20 and job.debug and job.snippet_id is None
    out = ok.structured_content
    assert out["workdir"] == str(where) and out["args"] == ["--epochs", "1"]
    assert out["verification"]["status"] == "passed"
    assert all(r.is_error for r in bad), [r.content[0].text for r in bad if not r.is_error]
    assert "workdir must be a plain name" in bad[0].content[0].text
    assert "filename must be a plain name" in bad[1].content[0].text and "end in .py" in bad[2].content[0].text
    assert len(rec.jobs) == 1 and sorted(p.name for p in tmp_path.iterdir()) == [".home", "run-a"]


RESUMABLE = """\
import os
import sys

import torch.distributed as dist

dist.init_process_group("gloo")
if "--resume" in sys.argv[1:]:
    with open("ckpt.txt", encoding="utf-8") as f:  # written by an earlier call in this workdir
        step = int(f.read())
    assert step == 1 and os.environ["RUN_TAG"] == "b", (step, os.environ.get("RUN_TAG"))
elif dist.get_rank() == 0:
    with open("ckpt.txt", "w", encoding="utf-8") as f:
        f.write("1")
dist.barrier()
dist.destroy_process_group()
"""


@pytest.mark.slow
def test_verify_script_over_stdio_resumes_in_its_workdir(tmp_path):
    home = tmp_path / "home"
    params = StdioServerParameters(
        command=str(EXE), args=["mcp", "--allow-run-scripts"], cwd=str(tmp_path), env={"FSDP_SKILL_HOME": str(home)}
    )

    async def go():
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            first = await client.call_tool(
                "verify_script", {"code": RESUMABLE, "filename": "train.py", "workdir": "resume", "timeout": 120}
            )
            second = await client.call_tool(
                "verify_script",
                {
                    "code": RESUMABLE,
                    "filename": "train.py",
                    "workdir": "resume",
                    "args": ["--resume"],
                    "env": {"RUN_TAG": "b"},
                    "timeout": 120,
                },
            )
            elsewhere = await client.call_tool(
                "verify_script",
                {
                    "code": RESUMABLE,
                    "filename": "train.py",
                    "workdir": "other",
                    "args": ["--resume"],
                    "env": {"RUN_TAG": "b"},
                    "timeout": 120,
                },
            )
            return tools, first, second, elsewhere

    tools, first, second, elsewhere = asyncio.run(go())
    assert tools == TOOLS | SCRIPT_TOOLS
    for res in (first, second, elsewhere):
        assert not res.is_error, res.content
    assert first.structured_content["verification"]["status"] == "passed", first.structured_content
    assert second.structured_content["verification"]["status"] == "passed", second.structured_content
    assert second.structured_content["workdir"] == first.structured_content["workdir"]
    other = elsewhere.structured_content["verification"]
    assert other["status"] == "failed" and "ckpt.txt" in other["reason"], other
    # the session directory (a temporary one) is gone with the server; nothing was written to its cwd
    assert not Path(first.structured_content["workdir"]).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


AGENT_SCRIPT = """\
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if "--resume" in sys.argv[1:]:
    state = torch.load("ckpt.pt")  # saved by the first call in this workdir
    assert state["step"] == 1 and torch.equal(state["w"], torch.arange(4.0)), state
    print(f"rank {rank} resumed from step {state['step']}")
elif rank == 0:
    torch.save({"step": 1, "w": torch.arange(4.0)}, "ckpt.pt")
    with open("log.txt", "w", encoding="utf-8") as f:
        f.write("saved step 1\\n")
    for key, value in sorted(os.environ.items()):
        print(f"ENV {key}={value}")
    for i in range(500):  # far more than output_tail's 40 lines
        print(f"line {i:03d}")
dist.barrier()
dist.destroy_process_group()
"""

PLANT = """\
import os

os.symlink("/etc", "escape")
os.symlink("/etc/hostname", "leak.txt")
os.symlink(os.path.abspath("log.txt"), "inside.txt")  # even a link that stays inside is not followed
for i in range(1000):  # 100,000 bytes: past the 64 KiB bound
    print(f"{i:04d} " + "x" * 94)
"""


@pytest.mark.slow
def test_agent_flow_over_stdio_checkpoint_files_and_read_run_file(tmp_path):
    """What a coding agent does: save a checkpoint with torch.save, resume from it in a second call, see the file
    in the run's list, read a text file back; escapes refused; the tool's state never visible to the ranks."""
    import base64

    home = tmp_path / "home"
    params = StdioServerParameters(
        command=str(EXE), args=["mcp", "--allow-run-scripts"], cwd=str(tmp_path), env={"FSDP_SKILL_HOME": str(home)}
    )
    common = {"code": AGENT_SCRIPT, "filename": "train.py", "workdir": "agent", "timeout": 120, "world_size": 2}

    async def go():
        async with Client(params) as client:
            first = await client.call_tool("verify_script", common)
            ckpt_size = (Path(first.structured_content["workdir"]) / "ckpt.pt").stat().st_size
            second = await client.call_tool("verify_script", {**common, "args": ["--resume"]})
            text = await client.call_tool("read_run_file", {"workdir": "agent", "path": "log.txt"})
            ckpt = await client.call_tool("read_run_file", {"workdir": "agent", "path": "ckpt.pt"})
            planted = await client.call_tool(
                "verify_script", {"code": PLANT, "filename": "plant.py", "workdir": "agent", "world_size": 1, "timeout": 120}
            )
            refused = [
                await client.call_tool("read_run_file", {"workdir": "agent", "path": path})
                for path in ("../agent/log.txt", "/etc/hostname", "escape/hostname", "leak.txt", "inside.txt")
            ]
            return first, ckpt_size, second, text, ckpt, planted, refused

    first, ckpt_size, second, text, ckpt, planted, refused = asyncio.run(go())
    for res in (first, second, text, ckpt, planted):
        assert not res.is_error, res.content
    out = first.structured_content
    assert out["verification"]["status"] == "passed", out["verification"]
    assert second.structured_content["verification"]["status"] == "passed", second.structured_content["verification"]
    assert [r["output"] for r in second.structured_content["verification"]["ranks"]] == [
        "rank 0 resumed from step 1\n",
        "rank 1 resumed from step 1\n",
    ]
    files = {f["path"]: f["size"] for f in out["files"]}
    assert files == {"ckpt.pt": ckpt_size, "log.txt": len("saved step 1\n"), "train.py": len(AGENT_SCRIPT.encode())}
    assert ckpt_size > 0
    # the whole output, far past the old last-40-lines tail, within the stated bound
    rank0 = out["verification"]["ranks"][0]
    assert "line 000" in rank0["output"] and "line 499" in rank0["output"] and "line 000" not in rank0["output_tail"]
    assert rank0["output_dropped_bytes"] == 0 and out["output_limit_bytes"] == 64 * 1024
    # the rank's environment: no FSDP_SKILL_* variable, the state directory nowhere in it
    env_lines = [ln for ln in rank0["output"].splitlines() if ln.startswith("ENV ")]
    assert any(ln.startswith("ENV HOME=") for ln in env_lines), env_lines
    assert not [ln for ln in env_lines if "FSDP_SKILL_" in ln or str(home) in ln]
    assert not Path(out["workdir"]).is_relative_to(home)
    t = text.structured_content
    assert (t["encoding"], t["content"], t["truncated"]) == ("utf-8", "saved step 1\n", False)
    c = ckpt.structured_content
    assert c["encoding"] == "base64" and len(base64.b64decode(c["content"])) == c["size"] == ckpt_size
    (long,) = planted.structured_content["verification"]["ranks"]
    assert len(long["output"].encode()) == 64 * 1024 and long["output_dropped_bytes"] == 100_000 - 64 * 1024
    assert long["output"].endswith("0999 " + "x" * 94 + "\n") and "0000 " not in long["output"]
    kinds = {f["path"]: f["kind"] for f in planted.structured_content["files"]}
    assert kinds["escape"] == kinds["leak.txt"] == kinds["inside.txt"] == "symlink"
    assert not any(p.startswith("escape/") for p in kinds)
    messages = [r.content[0].text for r in refused]
    assert all(r.is_error for r in refused), messages
    assert "no '..'" in messages[0] and "not absolute" in messages[1]
    assert all("symbolic link" in m for m in messages[2:]), messages


# --------------------------------------------------------------------------- JSON-RPC framing (a real `fsdp-skill mcp`)
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def _raw_session(lines: list[bytes], tmp_path, *args) -> tuple[list[dict], int]:
    """Write ``lines`` to a real ``fsdp-skill mcp`` then close its stdin; returns every reply line and the exit code."""
    import subprocess

    head = [json.dumps(INIT).encode(), b'{"jsonrpc":"2.0","method":"notifications/initialized"}']
    proc = subprocess.run(
        [str(EXE), "mcp", *args],
        input=b"\n".join(head + lines) + b"\n",
        capture_output=True,
        timeout=300,
        env={"FSDP_SKILL_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    replies = [json.loads(line) for line in proc.stdout.decode().splitlines()]  # every line is JSON
    return replies, proc.returncode


def _call(rid, name, arguments):
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    ).encode()


def test_jsonrpc_errors_from_a_real_stdio_server(tmp_path):
    lines = [
        b"{bad json",  # -32700, id null
        b'{"jsonrpc":"2.0","id":"u","method":"ping"\xff}',  # not UTF-8: -32700
        b"[" * 100_000,  # too deep: -32700
        b'[{"jsonrpc":"2.0","id":9,"method":"ping"}]',  # batch: -32600
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1,2]}',  # -32602
        b'{"jsonrpc":"2.0","id":"s","method":"tools/list","params":"x"}',  # -32602
        b'{"id":11,"method":"ping"}',  # no jsonrpc: -32600
        b'{"jsonrpc":"2.0","method":"notifications/initialized","params":5}',  # bad notification: no reply
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}',  # the SDK's -32602
        b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',  # id null: -32600
        (
            b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"ask","arguments":'
            b'{"question":"fsdp \\ud800 shard","verify":false}}}'
        ),  # lone surrogate: -32602
        b'{"jsonrpc":"2.0","id":13,"method":"tools/call\\udc00","params":{}}',  # in the method: -32600
        _call(3, "ask", {"question": "fsdp", "k": "3", "verify": False}),  # tool error, not coerced
        _call(4, "ask", {"question": "fsdp", "verify": False, "extra": 1}),  # tool error, unknown field
        b'{"jsonrpc":"2.0","id":6,"method":"tools/list"}',
        _call(5, "ask", {"question": "Join uneven inputs with DDP", "k": 1, "verify": False}),  # then EOF at once
    ]
    replies, code = _raw_session(lines, tmp_path)
    assert code == 0
    errors = [(r.get("id"), r["error"]["code"]) for r in replies if "error" in r]
    expected = [
        (None, -32700),
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (2, -32602),
        ("s", -32602),
        (11, -32600),
        (7, -32602),
        (None, -32600),
        (12, -32602),
        (13, -32600),
    ]
    assert sorted(errors, key=repr) == sorted(expected, key=repr)  # the SDK's own reply (id 7) may come later
    assert "Parse error" in next(r for r in replies if "error" in r)["error"]["message"]
    results = {r["id"]: r["result"] for r in replies if "result" in r}
    assert set(results) == {0, 3, 4, 5, 6}
    assert results[3]["isError"] and "valid integer" in results[3]["content"][0]["text"]
    assert results[4]["isError"] and "Extra inputs are not permitted" in results[4]["content"][0]["text"]
    assert {t["name"] for t in results[6]["tools"]} == TOOLS  # no script tools without --allow-run-scripts
    last = results[5]
    assert not last.get("isError") and Answer.model_validate(last["structuredContent"]).sections[0].topic == "join"


def test_requests_written_before_eof_are_all_answered(tmp_path):
    lines = [_call(i, "ask", {"question": f"how to shard with fsdp {i}", "k": 1, "verify": False}) for i in range(1, 9)]
    replies, code = _raw_session(lines, tmp_path, "--allow-run-scripts")
    assert code == 0
    assert sorted(r["id"] for r in replies if "result" in r) == list(range(9))
    assert not any("error" in r for r in replies)


def test_skill_md_documents_every_mcp_tool_and_script_verify(tmp_path):
    text = (Path(__file__).parents[1] / "skill" / "SKILL.md").read_text(encoding="utf-8")

    async def go():
        async with Client(build_server(script_dir=str(tmp_path))) as client:
            return (await client.list_tools()).tools

    for tool in asyncio.run(go()):
        assert f"`{tool.name}`" in text, tool.name
    assert "--allow-run-scripts" in text and "-- --epochs 1" in text
    for phrase in ("--timeout S", "--launcher warm|torchrun", "working directory", "first on `sys.path`", "130"):
        assert phrase in text, phrase


def test_script_server_session_directory_is_removed_on_sigterm_and_after_sigkill(tmp_path):
    """SIGTERM: the server exits 0 and removes its session directory; a SIGKILLed server's directory (its pid
    gone) is removed by the next server with --allow-run-scripts."""
    import signal
    import subprocess
    import time

    env = {"FSDP_SKILL_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    tmp = tmp_path  # TMPDIR: where tempfile puts the session directory

    def start():
        proc = subprocess.Popen(
            [str(EXE), "mcp", "--allow-run-scripts"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        proc.stdin.write(json.dumps(INIT).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0  # initialized: the session directory exists
        (session,) = tmp.glob(f"fsdp-skill-mcp-{proc.pid}-*")
        return proc, session

    proc, session = start()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0 and not session.exists()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        stream.close()
    killed, left = start()
    killed.kill()
    killed.wait(timeout=60)
    for stream in (killed.stdin, killed.stdout, killed.stderr):
        stream.close()
    assert left.exists()  # SIGKILL leaves it ...
    deadline = time.monotonic() + 60
    while _pid_alive(killed.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    nxt, _ = start()  # ... and the next server removes it
    try:
        assert not left.exists()
    finally:
        nxt.stdin.close()
        nxt.wait(timeout=60)
        nxt.stdout.close()
        nxt.stderr.close()


def _pid_alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_sent_scripts_get_the_sessions_home(tmp_path, fake_verifier):
    from fsdp_skill.core.verify.sent_scripts import run_sent_script

    class Recording:
        def __init__(self):
            self.jobs = []

        def run(self, jobs, *, launcher="warm", use_cache=True, progress=None):
            self.jobs.extend(jobs)
            return fake_verifier.run(jobs, launcher=launcher, use_cache=use_cache, progress=progress)

    rec = Recording()
    run_sent_script("print(1)\n", session_dir=str(tmp_path), verifier=rec)
    run_sent_script("print(1)\n", session_dir=str(tmp_path), env={"HOME": "/elsewhere"}, verifier=rec)
    first, second = (dict(j.env) for j in rec.jobs)
    assert first["HOME"] == str(tmp_path / ".home") and first["XDG_CACHE_HOME"] == str(tmp_path / ".home" / ".cache")
    assert second["HOME"] == "/elsewhere"  # the agent's own setting wins
