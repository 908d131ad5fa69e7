"""The published schemas keep every field and description: the OpenAPI document (``/openapi.json``) and the MCP
tools' ``inputSchema`` / ``outputSchema`` list the same objects, properties, required fields and descriptions as
the fixture ``tests/data/schemas/published_fields.json``, saved when the answers' types were pydantic models
(before they became records, :mod:`fsdp_skill.records`).

A change that adds or renames a field, or rewords a description, updates the fixture on purpose:
``python tests/test_published_schemas.py --write``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "data" / "schemas" / "published_fields.json"


def _objects(prefix: str, schema: dict, out: dict[str, dict]) -> None:
    """Each object schema under ``schema`` (itself and its ``$defs``), as {name: its description, required fields
    and each property's description (None when it has none)}."""
    for name, sub in schema.get("$defs", {}).items():
        _objects(f"{prefix}/$defs/{name}", sub, out)
    if "properties" in schema:
        out[prefix] = {
            "description": schema.get("description"),
            "required": sorted(schema.get("required", [])),
            "properties": {k: v.get("description") for k, v in schema["properties"].items()},
        }


def published_fields(openapi: dict, tools: dict[str, dict]) -> dict[str, dict]:
    """The projection the fixture holds: every object schema of the OpenAPI components and of each MCP tool."""
    out: dict[str, dict] = {}
    for name, schema in openapi["components"]["schemas"].items():
        _objects(f"openapi/{name}", schema, out)
    for tool, schemas in tools.items():
        for kind in ("inputSchema", "outputSchema"):
            if schemas.get(kind):
                _objects(f"mcp/{tool}/{kind}", schemas[kind], out)
    return out


def _current() -> dict[str, dict]:
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app
    from fsdp_skill.adapters.mcp.server import build_server

    openapi = TestClient(create_app()).get("/openapi.json").json()

    async def listed():
        return await build_server(script_dir=tempfile.mkdtemp()).list_tools()

    tools = {t.name: {"inputSchema": t.input_schema, "outputSchema": t.output_schema} for t in asyncio.run(listed())}
    return published_fields(openapi, tools)


def test_openapi_and_mcp_schemas_keep_every_field_and_description():
    pytest.importorskip("fastapi")
    pytest.importorskip("mcp")
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    current = _current()
    assert sorted(current) == sorted(expected)
    for name in expected:
        assert current[name] == expected[name], name


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(_current(), indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
