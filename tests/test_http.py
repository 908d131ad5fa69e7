"""HTTP adapter through FastAPI's TestClient (every route, every client error), httpx.AsyncClient for
concurrency, a real uvicorn started by `fsdp-skill serve` for the README curl example, and one real
verification of a knowledge snippet on a gloo process group."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from fsdp_skill.adapters.http.app import MAX_BODY_BYTES, create_app
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.core.verify.export import split_script
from fsdp_skill.core.verify.snippets import in_flight
from fsdp_skill.runtime import procfs

HAVE_TORCH = importlib.util.find_spec("torch") is not None
# the installed torch's release as its package metadata says it ('2.13.0' of '2.13.0+cpu', '2.14.1' of the CUDA wheel)
TORCH_RELEASE = importlib.metadata.version("torch").split("+")[0] if HAVE_TORCH else None

EXE = Path(sys.executable).with_name("fsdp-skill")
ERROR_KEYS = {"error", "code"}
# The README's curl example (README "HTTP API"); test_readme_curl_example runs it against a real server.
README_CURL = (
    "curl -s http://127.0.0.1:8000/v1/ask -H 'content-type: application/json' "
    '-d \'{"question": "How do I use bf16 mixed precision with fully_shard?", "k": 2, "verify": false}\''
)


@pytest.fixture(scope="module")
def kb():
    return load_knowledge()


@pytest.fixture
def client(fake_verifier):
    """A client of the app whose verdicts come from ``fake_verifier`` (nothing runs)."""
    with TestClient(create_app(verifier=fake_verifier)) as c:
        yield c


def a_snippet(kb, cuda=False):
    return next(s for s in kb.snippets.values() if ("cuda" in s.requires) == cuda)


def a_section_with_snippets(kb):
    return next(s for s in kb.sections.values() if s.snippets)


# --------------------------------------------------------------------------- routes
def test_healthz(client, kb):
    r = client.get("/healthz")
    assert r.status_code == 200
    h = r.json()
    assert h["status"] == "ok" and h["knowledge_fingerprint"] == kb.fingerprint
    assert h["python"] == os.path.abspath(sys.executable)
    assert (h["topics"], h["sections"], h["snippets"]) == (len(kb.cards), len(kb.sections), len(kb.snippets))
    assert h["torch_version"].startswith(TORCH_RELEASE) if HAVE_TORCH else h["torch_version"] is None  # torch-free CI step: None


def test_openapi_docs(client):
    assert client.get("/docs").status_code == 200
    spec = client.get("/openapi.json").json()
    assert {
        "/v1/ask",
        "/v1/sections/{section_id}",
        "/v1/snippets/{snippet_id}",
        "/v1/snippets/{snippet_id}/verify",
        "/v1/snippets/{snippet_id}/export",
        "/healthz",
    } <= set(spec["paths"])
    ask_body = spec["components"]["schemas"]["AskRequest"]["properties"]
    assert {"question", "k", "verify", "language"} == set(ask_body)
    assert all(p.get("description") for p in ask_body.values())


def test_ask_unverified_matches_cli_contract(client, capsys):
    q = "How do I use bf16 mixed precision with fully_shard?"
    r = client.post("/v1/ask", json={"question": q, "k": 2, "verify": False})
    assert r.status_code == 200
    ans = r.json()
    from fsdp_skill.core.answer import ask

    expected = json.loads(ask(q, k=2, verify=False).model_dump_json())
    for key in ("query", "language", "abstained", "topics"):
        assert ans[key] == expected[key]
    assert [s["id"] for s in ans["sections"]] == [s["id"] for s in expected["sections"]]
    assert all(sn["verification"]["status"] == "unverified" for s in ans["sections"] for sn in s["snippets"])


def test_ask_language_override(client):
    r = client.post("/v1/ask", json={"question": "Join uneven inputs", "verify": False, "language": "zh"})
    assert r.status_code == 200 and r.json()["language"] == "zh"
    assert all(s["text"] and s["text_zh"] for s in r.json()["sections"])  # both bodies, whatever the language
    r = client.post("/v1/ask", json={"question": "不均匀输入怎么处理？", "verify": False})
    assert r.json()["language"] == "zh"
    r = client.post("/v1/ask", json={"question": "不均匀输入怎么处理？", "verify": False, "language": "en"})
    assert r.json()["language"] == "en"


def test_ask_abstains_out_of_scope(client):
    r = client.post("/v1/ask", json={"question": "How do I center a div in CSS?", "verify": False})
    assert r.status_code == 200 and r.json()["abstained"] is True and r.json()["reason"]


def test_ask_verify_attaches_verdicts(client, fake_verifier):
    r = client.post("/v1/ask", json={"question": "Join uneven inputs with DDP", "k": 2})
    assert r.status_code == 200
    snippets = [sn for s in r.json()["sections"] for sn in s["snippets"]]
    assert snippets and all(sn["verification"]["status"] == "passed" for sn in snippets)
    assert sorted(fake_verifier.runs) == sorted({sn["id"] for sn in snippets})
    r = client.post("/v1/ask", json={"question": "Join uneven inputs with DDP", "k": 2})
    assert all(sn["verification"]["cached"] for s in r.json()["sections"] for sn in s["snippets"])
    assert len(fake_verifier.runs) == len({sn["id"] for sn in snippets})  # second ask ran nothing


def test_section_route(client, kb, fake_verifier):
    sec = a_section_with_snippets(kb)
    r = client.get(f"/v1/sections/{sec.id}")
    assert r.status_code == 200
    body = r.json()
    assert body["id"] == sec.id and body["text"] == sec.text and body["sources"] == sec.sources
    assert [sn["id"] for sn in body["snippets"]] == [sn.id for sn in sec.snippets]
    assert all(sn["verification"]["status"] == "unverified" for sn in body["snippets"])
    assert fake_verifier.runs == []  # reading a section runs nothing
    client.post(f"/v1/snippets/{sec.snippets[0].id}/verify")
    body = client.get(f"/v1/sections/{sec.id}").json()
    assert body["snippets"][0]["verification"]["status"] == "passed" and body["snippets"][0]["verification"]["cached"]


def test_snippet_get_verify_get(client, kb, fake_verifier):
    spec = a_snippet(kb)
    r = client.get(f"/v1/snippets/{spec.id}")
    assert r.status_code == 200
    info = r.json()
    assert info["code"] == spec.code and info["code_sha256"] == hashlib.sha256(spec.code.encode()).hexdigest()
    assert info["verification"]["status"] == "unverified" and info["launch"] == spec.launch
    r = client.post(f"/v1/snippets/{spec.id}/verify")
    assert r.status_code == 200 and r.json()["verification"]["status"] == "passed"
    assert r.json()["verification"]["code_sha256"] == info["code_sha256"]
    info = client.get(f"/v1/snippets/{spec.id}").json()
    assert info["verification"]["status"] == "passed" and info["verification"]["cached"] is True
    client.post(f"/v1/snippets/{spec.id}/verify")
    assert fake_verifier.runs == [spec.id]  # cached
    client.post(f"/v1/snippets/{spec.id}/verify?force=true")
    assert fake_verifier.runs == [spec.id, spec.id]


def test_export_route(client, kb, fake_verifier):
    spec = a_snippet(kb)
    r = client.get(f"/v1/snippets/{spec.id}/export")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/x-python")
    assert r.headers["content-disposition"] == f'attachment; filename="{spec.filename}"'
    header, code = split_script(r.text)
    assert code == spec.code and r.content.endswith(spec.code.encode())
    assert r.headers["x-code-sha256"] == hashlib.sha256(code.encode()).hexdigest()
    assert f"# snippet:     {spec.id}" in header and "# verdict:     passed" in header and spec.launch in header


@pytest.mark.parametrize("status", ["failed", "timeout", "skipped"])
def test_export_refuses_unverified(client, kb, fake_verifier, status):
    spec = a_snippet(kb)
    fake_verifier.status[spec.id] = status
    r = client.get(f"/v1/snippets/{spec.id}/export")
    assert r.status_code == 409 and r.json()["code"] == "not_verified" and spec.id in r.json()["error"]
    r = client.get(f"/v1/snippets/{spec.id}/export?include_unverified=true")
    assert r.status_code == 200 and "NOT VERIFIED" in r.text and r.headers["x-verdict"] == status


# --------------------------------------------------------------------------- client errors: 4xx, JSON body, never 500
BAD_REQUESTS = [
    ("empty question", "post", "/v1/ask", {"json": {"question": ""}}, 422, "invalid_request"),
    ("whitespace question", "post", "/v1/ask", {"json": {"question": "  \n\t "}}, 400, "bad_input"),
    ("40 kB question", "post", "/v1/ask", {"json": {"question": "fsdp " * 8000}}, 422, "invalid_request"),
    (
        "invalid UTF-8 body",
        "post",
        "/v1/ask",
        {"content": b'{"question": "how \xff to shard"}', "headers": {"content-type": "application/json"}},
        422,
        "invalid_request",
    ),
    (
        "deeply nested body",
        "post",
        "/v1/ask",
        {"content": b'{"question": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "headers": {"content-type": "application/json"}},
        422,
        "invalid_request",
    ),
    ("verify a one-segment id", "post", "/v1/snippets/x/verify", {}, 404, "not_found"),
    ("binary question", "post", "/v1/ask", {"json": {"question": "fsdp\x00\x01\x02"}}, 400, "bad_input"),
    ("k=0", "post", "/v1/ask", {"json": {"question": "fsdp", "k": 0}}, 422, "invalid_request"),
    ("k=21", "post", "/v1/ask", {"json": {"question": "fsdp", "k": 21}}, 422, "invalid_request"),
    ("k=abc", "post", "/v1/ask", {"json": {"question": "fsdp", "k": "abc"}}, 422, "invalid_request"),
    ("question not a string", "post", "/v1/ask", {"json": {"question": 42}}, 422, "invalid_request"),
    ("verify not a bool", "post", "/v1/ask", {"json": {"question": "fsdp", "verify": "maybe"}}, 422, "invalid_request"),
    ("bad language", "post", "/v1/ask", {"json": {"question": "fsdp", "language": "fr"}}, 422, "invalid_request"),
    ("unknown field", "post", "/v1/ask", {"json": {"question": "fsdp", "code": "import os"}}, 422, "invalid_request"),
    ("missing body", "post", "/v1/ask", {}, 422, "invalid_request"),
    ("missing question", "post", "/v1/ask", {"json": {"k": 2}}, 422, "invalid_request"),
    ("body is a list", "post", "/v1/ask", {"json": ["fsdp"]}, 422, "invalid_request"),
    (
        "malformed JSON",
        "post",
        "/v1/ask",
        {"content": b'{"question": ', "headers": {"content-type": "application/json"}},
        422,
        "invalid_request",
    ),
    (
        "body over limit",
        "post",
        "/v1/ask",
        {"content": b"x" * (MAX_BODY_BYTES + 1), "headers": {"content-type": "application/json"}},
        413,
        "body_too_large",
    ),
    ("unknown section", "get", "/v1/sections/fsdp2/no-such-section", {}, 404, "not_found"),
    ("section id without topic", "get", "/v1/sections/no-such-section", {}, 404, "not_found"),
    ("unknown snippet", "get", "/v1/snippets/join/no-such-snippet", {}, 404, "not_found"),
    ("verify unknown snippet", "post", "/v1/snippets/join/no-such-snippet/verify", {}, 404, "not_found"),
    ("export unknown snippet", "get", "/v1/snippets/join/no-such-snippet/export", {}, 404, "not_found"),
    ("force not a bool", "post", "/v1/snippets/join/x/verify?force=perhaps", {}, 422, "invalid_request"),
    ("unknown route", "get", "/v1/nothing", {}, 404, "not_found"),
    ("GET /v1/ask", "get", "/v1/ask", {}, 405, "method_not_allowed"),
    ("PUT /v1/ask", "put", "/v1/ask", {"json": {"question": "fsdp"}}, 405, "method_not_allowed"),
    ("GET verify", "get", "/v1/snippets/join/ddp-join/verify", {}, 405, "method_not_allowed"),
    ("POST export", "post", "/v1/snippets/join/ddp-join/export", {}, 405, "method_not_allowed"),
    ("DELETE section", "delete", "/v1/sections/join/ddp-join", {}, 405, "method_not_allowed"),
    ("POST healthz", "post", "/healthz", {}, 405, "method_not_allowed"),
    ("check: missing code", "post", "/v1/check", {"json": {"path": "x.py"}}, 422, "invalid_request"),
    ("check: empty code", "post", "/v1/check", {"json": {"code": ""}}, 422, "invalid_request"),
    ("check: code over limit", "post", "/v1/check", {"json": {"code": "x" * 200_001}}, 422, "invalid_request"),
    ("check: code not a string", "post", "/v1/check", {"json": {"code": 42}}, 422, "invalid_request"),
    ("check: select not a list", "post", "/v1/check", {"json": {"code": "x = 1", "select": "FSD0"}}, 422, "invalid_request"),
    ("check: unknown field", "post", "/v1/check", {"json": {"code": "x = 1", "run": True}}, 422, "invalid_request"),
    ("check: unknown code prefix", "post", "/v1/check", {"json": {"code": "x = 1", "select": ["E501"]}}, 400, "bad_input"),
    ("GET /v1/check", "get", "/v1/check", {}, 405, "method_not_allowed"),
]


@pytest.mark.parametrize("method, url, kwargs, status, code", [b[1:] for b in BAD_REQUESTS], ids=[b[0] for b in BAD_REQUESTS])
def test_client_errors(client, fake_verifier, method, url, kwargs, status, code):
    r = client.request(method.upper(), url, **kwargs)
    assert r.status_code == status, r.text
    body = r.json()
    assert body["code"] == code and isinstance(body["error"], str) and body["error"]
    assert set(body) == ERROR_KEYS | ({"detail"} if code == "invalid_request" else set())
    assert fake_verifier.runs == []


def test_chunked_body_over_limit(client):
    chunks = (b"x" * 10_000 for _ in range(MAX_BODY_BYTES // 10_000 + 2))
    r = client.post("/v1/ask", content=chunks, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json()["code"] == "body_too_large"


def test_error_messages_say_what_to_fix(client):
    r = client.post("/v1/ask", json={"question": "fsdp " * 8000})
    assert "at most 32768 characters" in r.json()["error"] and r.json()["detail"][0]["loc"] == ["body", "question"]
    r = client.post("/v1/ask", json={"question": "fsdp", "k": "abc"})
    assert r.json()["detail"][0]["loc"] == ["body", "k"] and "abc" not in json.dumps(r.json()["detail"])
    r = client.get("/v1/snippets/join/ddp-joi")
    assert "did you mean join/ddp-join" in r.json()["error"]


def test_harness_failure_is_503(client, kb, fake_verifier):
    from fsdp_skill.errors import HarnessError

    def broken(jobs):
        raise HarnessError("warm launcher failed to start: boom")

    fake_verifier.gate = broken
    r = client.post(f"/v1/snippets/{a_snippet(kb).id}/verify")
    assert r.status_code == 503 and r.json() == {"error": "warm launcher failed to start: boom", "code": "harness_error"}
    assert in_flight() == {}  # the failed run is not left behind


# --------------------------------------------------------------------------- concurrency: one run per snippet
def _wait_for_joiners(snippet_id, n):
    deadline = time.monotonic() + 60
    while in_flight(snippet_id).get(snippet_id, 0) < n and time.monotonic() < deadline:
        time.sleep(0.005)


def test_concurrent_verify_shares_one_run(kb, fake_verifier):
    spec = a_snippet(kb)
    n = 8
    fake = fake_verifier
    fake.gate = lambda jobs: _wait_for_joiners(spec.id, n - 1)

    async def go():
        transport = httpx.ASGITransport(app=create_app(verifier=fake))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await asyncio.gather(*[c.post(f"/v1/snippets/{spec.id}/verify") for _ in range(n)])

    responses = asyncio.run(go())
    assert [r.status_code for r in responses] == [200] * n
    assert fake_verifier.runs == [spec.id]
    assert {r.json()["verification"]["status"] for r in responses} == {"passed"}
    assert in_flight() == {}


def test_concurrent_asks_share_runs(kb, fake_verifier):
    q = {"question": "Join uneven inputs with DDP", "k": 1}
    from fsdp_skill.core.answer import ask

    ids = [sn.id for s in ask(q["question"], k=1, verify=False).sections for sn in s.snippets]
    assert ids, "the question should retrieve a section with snippets"
    n = 4
    fake = fake_verifier
    fake.gate = lambda jobs: _wait_for_joiners(ids[0], n - 1)

    async def go():
        transport = httpx.ASGITransport(app=create_app(verifier=fake))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            return await asyncio.gather(*[c.post("/v1/ask", json=q) for _ in range(n)])

    responses = asyncio.run(go())
    assert [r.status_code for r in responses] == [200] * n
    assert sorted(fake_verifier.runs) == sorted(ids)  # each snippet ran once for four requests


# --------------------------------------------------------------------------- real server, real run
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_up(proc: subprocess.Popen, base: str, seconds: float = 60.0) -> None:
    """Poll ``base``/healthz until it answers 200; fails when the server exits or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "server did not come up"
        time.sleep(0.1)


@pytest.mark.slow
def test_serve_and_readme_curl_example(tmp_path):
    port = _free_port()
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_up(proc, base)
        cmd = README_CURL.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        if shutil.which("curl"):
            out = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60, check=True).stdout
        else:  # same request without curl
            out = httpx.post(
                f"{base}/v1/ask",
                timeout=60,
                json={"question": "How do I use bf16 mixed precision with fully_shard?", "k": 2, "verify": False},
            ).text
        ans = json.loads(out)
        assert ans["abstained"] is False and len(ans["sections"]) == 2
        assert ans["sections"][0]["topic"] == "mixed-precision"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_serve_rejects_bad_port(capsys):
    from fsdp_skill.main import main

    with pytest.raises(SystemExit) as exc:
        main(["serve", "--port", "70000"])
    assert exc.value.code == 2 and "port(70000) must be in 0..65535" in capsys.readouterr().err


@pytest.mark.slow
def test_real_verification_through_http(kb):
    client = TestClient(create_app())  # the real runtime
    spec = min((s for s in kb.snippets.values() if not s.requires), key=lambda s: len(s.code))
    r = client.post(f"/v1/snippets/{spec.id}/verify")
    assert r.status_code == 200, r.text
    v = r.json()["verification"]
    assert v["status"] == "passed", v
    assert v["backend"] == "gloo" and v["world_size"] == spec.world_size and v["cached"] is False
    assert v["code_sha256"] == hashlib.sha256(spec.code.encode()).hexdigest()
    again = client.get(f"/v1/snippets/{spec.id}").json()["verification"]
    assert again["status"] == "passed" and again["cached"] is True


CHECK_DATA = Path(__file__).resolve().parent / "data" / "check"


def test_check_route_finds_the_mistakes_and_runs_nothing(client, fake_verifier, capsys):
    from fsdp_skill.main import main

    code = (CHECK_DATA / "FSD001_bad.py").read_text(encoding="utf-8")
    r = client.post("/v1/check", json={"code": code, "path": "train.py"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"findings", "counts"}
    assert [f["code"] for f in body["findings"]] == ["FSD001", "FSD001"]
    assert body["counts"] == {"error": 2, "warning": 0, "info": 0, "total": 2}
    f = body["findings"][0]
    assert f["path"] == "train.py" and f["line"] == 13 and f["section"] and f["snippet"]
    # the same findings as the CLI's --json on the file
    assert main(["check", "--json", str(CHECK_DATA / "FSD001_bad.py")]) == 1
    cli = json.loads(capsys.readouterr().out)
    assert [{**x, "path": "train.py"} for x in cli] == body["findings"]
    assert fake_verifier.runs == []


def test_check_route_select_ignore_default_path_and_syntax_error(client):
    code = (CHECK_DATA / "FSD003_bad.py").read_text(encoding="utf-8")
    every = client.post("/v1/check", json={"code": code}).json()
    assert every["findings"] and {f["path"] for f in every["findings"]} == {"script.py"}
    assert client.post("/v1/check", json={"code": code, "ignore": ["FSD003"]}).json()["counts"]["total"] == sum(
        f["code"] != "FSD003" for f in every["findings"]
    )
    assert client.post("/v1/check", json={"code": code, "select": ["FSD0"], "ignore": ["FSD0"]}).json() == {
        "findings": [],
        "counts": {"error": 0, "warning": 0, "info": 0, "total": 0},
    }
    clean = client.post(
        "/v1/check", json={"code": (CHECK_DATA / "FSD003_good.py").read_text(encoding="utf-8"), "select": ["FSD003"]}
    ).json()
    assert clean["counts"]["total"] == 0
    (f,) = client.post("/v1/check", json={"code": "def f(:\n"}).json()["findings"]
    assert f["code"] == "FSD000" and f["severity"] == "error"


def test_check_route_in_openapi(client):
    spec = client.get("/openapi.json").json()
    assert "/v1/check" in spec["paths"] and "422" in spec["paths"]["/v1/check"]["post"]["responses"]
    body = spec["components"]["schemas"]["CheckRequest"]
    assert set(body["properties"]) == {"code", "path", "select", "ignore"} and body["required"] == ["code"]
    assert body["additionalProperties"] is False
    assert (body["properties"]["code"]["minLength"], body["properties"]["code"]["maxLength"]) == (1, 200_000)
    assert all(p.get("description") for p in body["properties"].values())
    assert "findings" in spec["components"]["schemas"]["CheckReport"]["properties"]


def test_wrong_json_types_are_not_coerced(client):
    for body in ({"question": "Join uneven inputs", "k": "3"}, {"question": "Join", "verify": "yes"}):
        r = client.post("/v1/ask", json=body)
        assert r.status_code == 422 and r.json()["code"] == "invalid_request", body


@pytest.mark.torch
def test_ask_carries_located_errors(client):
    q = "ValueError: Default process group has not been initialized, please make sure to call init_process_group."
    r = client.post("/v1/ask", json={"question": q, "k": 2, "verify": False})
    assert r.status_code == 200
    err = r.json()["errors"][0]
    assert err["kind"] == "python" and err["raised_at"]["path"] == "torch/distributed/distributed_c10d.py"
    assert err["sections"] and r.json()["sections"][0]["id"] in err["sections"]


def test_lone_surrogate_is_a_422(client):
    """Not valid Unicode, so not a JSON-schema string: the same 422 as any other schema violation."""
    r = client.post(
        "/v1/ask", content=b'{"question": "how to shard with fsdp \\ud800"}', headers={"content-type": "application/json"}
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_request" and "unicode" in r.json()["error"]


def test_malformed_json_says_line_and_column(client):
    r = client.post("/v1/ask", content=b'{"question": "x",\n "k": }', headers={"content-type": "application/json"})
    body = r.json()
    assert r.status_code == 422 and "malformed JSON at line 2, column 7: Expecting value" in body["error"]
    assert body["detail"] == [
        {"loc": ["body"], "msg": "malformed JSON at line 2, column 7: Expecting value", "type": "json_invalid"}
    ]


def test_openapi_states_what_the_server_enforces(client):
    schema = client.get("/openapi.json").json()["components"]["schemas"]["AskRequest"]
    q, k = schema["properties"]["question"], schema["properties"]["k"]
    assert (q["minLength"], q["maxLength"]) == (1, 32768) and (k["type"], k["minimum"], k["maximum"]) == ("integer", 1, 20)
    for question, status in (("", 422), ("x" * 32769, 422), ("x" * 32768, 200), ("   ", 400)):
        r = client.post("/v1/ask", json={"question": question, "verify": False})
        assert r.status_code == status, (len(question), r.text[:200])


def _busy_port(family: int, host: str):
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
    except OSError:
        sock.close()
        pytest.skip(f"cannot bind {host} here")
    sock.listen()
    return sock


@pytest.mark.parametrize(
    "family, host, arg",
    [
        (socket.AF_INET, "127.0.0.1", "127.0.0.1"),
        (socket.AF_INET6, "::1", "::1"),
        (socket.AF_INET6, "::1", "[::1]"),
    ],
    ids=["ipv4", "ipv6", "ipv6 in brackets"],
)
def test_serve_on_a_busy_port_is_exit_1_and_loopback_does_not_warn(capsys, family, host, arg):
    from fsdp_skill.main import main

    with _busy_port(family, host) as sock:
        code = main(["serve", "--host", arg, "--port", str(sock.getsockname()[1])])
    err = capsys.readouterr().err
    assert code == 1 and "already in use" in err and "Traceback" not in err
    assert "warning" not in err and len([ln for ln in err.splitlines() if "error" in ln]) == 1


def test_serve_unresolvable_host_is_exit_2(capsys):
    from fsdp_skill.main import main

    assert main(["serve", "--host", "no-such-host.invalid", "--port", "0"]) == 2
    assert "cannot resolve" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_closes_connections_that_send_no_whole_request(tmp_path):
    """A client that connects and sends nothing, or only part of a request's headers or body, is cut at the
    read deadline; a request that arrived whole is answered, and a connection used for one stays usable
    until its own deadline."""
    port = _free_port()
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port), "--log-level", "warning", "--read-timeout", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with contextlib.ExitStack() as opened:  # every socket is closed, also when an assertion fails
        opened.callback(proc.communicate, timeout=30)  # runs after terminate (last in, first out)
        opened.callback(proc.terminate)
        _wait_until_up(proc, f"http://127.0.0.1:{port}")
        body = b'{"question": "how to shard with fsdp", "verify": false}'
        partial = {
            "idle": b"",
            "headers": b"GET /healthz HTTP/1.1\r\nHost: x\r\n",
            "body": b"POST /v1/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body[:10],
        }
        socks = {}
        for name, data in partial.items():
            socks[name] = opened.enter_context(socket.create_connection(("127.0.0.1", port), timeout=60))
            socks[name].sendall(data)
        whole = opened.enter_context(socket.create_connection(("127.0.0.1", port), timeout=60))
        whole.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        for name, s in socks.items():  # closed by the server: recv returns b"" long before the 60 s socket timeout
            assert s.recv(65536) == b"", name
        answer = b""
        while chunk := whole.recv(65536):  # the whole response, then EOF: closed at its next deadline too
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200") and b'"knowledge_fingerprint"' in answer, answer[:300]
        assert proc.poll() is None


def test_serve_rejects_a_bad_read_timeout(capsys):
    from fsdp_skill.main import main

    for bad in ("0", "-1", "inf", "nan", "soon"):
        with pytest.raises(SystemExit) as exc:
            main(["serve", "--read-timeout", bad])
        assert exc.value.code == 2
        assert "--read-timeout" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_with_several_workers_starts_and_stops_cleanly(tmp_path):
    """README's ``fsdp-skill serve --port 9000 --workers 2``: uvicorn hands each worker process the config, with the
    read-deadline protocol class in it, by pickle (it failed: a class made at run time has no importable name)."""
    port = _free_port()
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port), "--workers", "2", "--read-timeout", "7.5", "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_up(proc, base)
        ans = httpx.post(f"{base}/v1/ask", timeout=60, json={"question": "fully_shard bf16", "k": 1, "verify": False})
        assert ans.status_code == 200 and ans.json()["sections"], ans.text
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_the_read_deadline_class_pickles_by_name_into_a_fresh_process():
    from fsdp_skill.adapters.http.protocol import protocol_class

    data = pickle.dumps(protocol_class(2.5))
    code = "import pickle, sys; c = pickle.loads(sys.stdin.buffer.read()); print(c.__name__, c.read_timeout)"
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, check=True).stdout
    assert out.decode().split() == ["ReadDeadlineH11Protocol_2500000us", "2.5"]
    assert pickle.loads(data) is protocol_class(2.5)


@pytest.mark.slow
def test_serve_workers_end_when_the_supervisor_is_killed(tmp_path):
    """``serve --workers 2`` SIGKILLed: its uvicorn workers (and their check workers) end and free the port instead of
    serving on with PPID 1 (probe 29 N3)."""
    port = _free_port()
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [str(EXE), "serve", "--port", str(port), "--workers", "2", "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    left: set[int] = set()
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_until_up(proc, base)
        assert httpx.post(f"{base}/v1/check", json={"code": "import torch\n"}, timeout=60).status_code == 200
        below = set(procfs.descendants(proc.pid))
        assert len(below) >= 2, below  # the workers (one with its check worker), the resource tracker
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (left := {p for p in below if procfs.alive(p)}):
            time.sleep(0.2)
        assert not left, f"left running after the supervisor's SIGKILL: {sorted(left)}"
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{base}/healthz", timeout=2)
    finally:
        for p in left:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        proc.kill()
        proc.communicate(timeout=30)
