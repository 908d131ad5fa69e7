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
from fsdp_skill.core.export import split_script
from fsdp_skill.core.knowledge import load_knowledge
from fsdp_skill.core.models import Answer, SectionOut
from fsdp_skill.core.snippets import SnippetInfo
from fsdp_skill.core.toolspec import tool_specs
from fsdp_skill.errors import NotFoundError, QueryError
from fsdp_skill.main import main

EXE = Path(sys.executable).with_name("fsdp-skill")
TOOLS = {"ask", "get_section", "list_sections", "verify_snippet", "export_snippet"}
# The README's MCP client configuration; test_stdio_server_from_readme_config launches exactly this.
README_MCP_CONFIG = {"mcpServers": {"fsdp-skill": {"command": "fsdp-skill", "args": ["mcp"]}}}
TERMS = ["FSDP", "fully_shard", "分片", "混合精度", "卸载", "FSDP2", "不均匀输入", "后端", "init_process_group", "初始化", "检查点"]


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
        return await c.call_tool("ask", {"question": "How do I use bf16 mixed precision with fully_shard?", "k": 2,
                                         "verify": False})

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
    assert ans.language == "zh" and ans.sections and ans.sections[0].zh


def test_call_get_section(kb):
    sec = next(s for s in kb.sections.values() if s.snippets)

    async def body(c):
        return await c.call_tool("get_section", {"id": sec.id})

    res = run(body, mode="legacy")
    assert not res.is_error
    out = SectionOut.model_validate(res.structured_content)
    assert out.id == sec.id and out.text == sec.text and [s.id for s in out.snippets] == [s.id for s in sec.snippets]
    assert all(s.verification.status == "unverified" for s in out.snippets)


@pytest.mark.parametrize("tool, args, message", [
    ("ask", {"question": ""}, "the question is empty"),
    ("ask", {"question": "   "}, "the question is empty"),
    ("ask", {"question": "fsdp " * 8000}, "the limit is 32,768"),
    ("ask", {"question": "fsdp", "k": 0}, "greater than or equal to 1"),
    ("ask", {"question": "fsdp", "k": "abc"}, "valid integer"),
    ("ask", {}, "question"),
    ("get_section", {"id": "join/no-such"}, "unknown section id 'join/no-such'"),
    ("verify_snippet", {"id": "join/no-such"}, "unknown snippet id 'join/no-such'"),
    ("export_snippet", {"id": "join/no-such"}, "unknown snippet id 'join/no-such'"),
], ids=["empty", "whitespace", "40 kB", "k=0", "k=abc", "no question", "unknown section", "unknown snippet",
        "export unknown snippet"])
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
    params = StdioServerParameters(command=str(EXE.with_name(cfg["command"])), args=cfg["args"],
                                   env={"FSDP_SKILL_HOME": str(tmp_path / "home")})

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
    assert params["properties"]["k"] == {"type": "integer", "minimum": 1, "maximum": 20, "default": 3,
                                         "description": params["properties"]["k"]["description"]}


def test_tools_cli_rejects_unknown_format(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tools", "--format", "xml"])
    assert exc.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err


def test_invoke_runs_a_function_call():
    ans = invoke("ask", '{"question": "Join uneven inputs with DDP", "k": 1, "verify": false}')
    assert isinstance(ans, Answer) and ans.sections[0].topic == "join"
    with pytest.raises(NotFoundError, match="unknown tool"):
        invoke("run_code", {"code": "print(1)"})
    with pytest.raises(QueryError, match="invalid arguments"):
        invoke("ask", {"question": "fsdp", "k": "abc"})
    with pytest.raises(QueryError, match="invalid arguments"):
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
