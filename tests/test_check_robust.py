"""The checker on files that are valid but hard: nested deeper than recursion allows, a 1,000-term expression, another
encoding (a PEP 263 coding cookie), an undecodable file among good ones, and the per-file budget
(``FSDP_SKILL_CHECK_BUDGET``), through every door: ``check_source``, ``check_paths``, the CLI, ``POST /v1/check`` and
the ``check_script`` tool. Each ends in findings or one clear ``FSD000``, never a traceback, and no timing is
asserted (the budget is made tiny instead)."""

from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_code, check_paths, check_source, check_tree
from fsdp_skill.core.check.files import UndecodableSource, read_source
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime import knobs

EXE = Path(sys.executable).parent / "fsdp-skill"
HEAD = "import torch.distributed as dist\n\nrank = dist.get_rank()\n"
BARRIER = "if rank == 0:\n    dist.barrier()\n"  # FSD003 at the line of dist.barrier()


def codes(findings) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in findings]


def barrier_line(src: str) -> int:
    return src.splitlines().index("    dist.barrier()") + 1


def parses(src: str) -> bool:
    """Does this interpreter's own parser take ``src``? (3.11/3.12 stop near 3,000 levels, 3.13 near 10,000.)"""
    try:
        ast.parse(src)
    except (RecursionError, MemoryError):
        return False
    return True


@pytest.mark.parametrize(
    "expr",
    [
        " + ".join(["a"] * 1000),  # a 1,000-term expression: a tree 1,000 deep
        "a" + ".b" * 1000,  # an attribute chain
        "f" + "()" * 1000,  # calls of calls
        " if c else ".join(["x"] * 1000),  # a conditional chain
        "not " * 1000 + "a",
    ],
    ids=["sum", "attributes", "calls", "conditional", "not"],
)
def test_a_long_expression_does_not_hide_the_finding_after_it(expr):
    src = HEAD + f"x = {expr}\n" + BARRIER
    assert codes(check_source(src)) == [("FSD003", barrier_line(src))]


def test_a_rank_test_of_1000_terms_is_still_a_rank_test():
    src = HEAD + "if " + " + ".join(["rank"] * 1000) + " == 0:\n    dist.barrier()\n"
    assert codes(check_source(src)) == [("FSD003", barrier_line(src))]
    src = HEAD + "if " + "not " * 1000 + "rank == 0:\n    dist.barrier()\n"  # an even number of `not`: rank 0 still
    assert codes(check_source(src)) == [("FSD003", barrier_line(src))]


@pytest.mark.parametrize("depth", [3000, 12000])
def test_a_file_nested_thousands_deep_is_a_finding_or_is_analysed(depth):
    """Python's parser gives up on such a file with RecursionError or MemoryError (3.11/3.12 near 3,000 levels,
    3.13 near 10,000; 3.10 takes it): then it is one FSD000 naming the reason, else it is analysed like any file."""
    for expr in (" + ".join(["a"] * depth), "-" * depth + "1", "lambda: " * depth + "1"):
        src = HEAD + f"x = {expr}\n" + BARRIER
        found = check_source(src, "deep.py")
        if parses(src):
            assert codes(found) == [("FSD003", barrier_line(src))]
        else:
            (f,) = found
            assert (f.code, f.severity, f.line) == ("FSD000", "error", 1)
            assert "nested too deeply" in f.message and ("RecursionError" in f.message or "MemoryError" in f.message)


def test_a_deep_file_among_others_through_the_cli(tmp_path):
    deep = HEAD + "x = " + " + ".join(["a"] * 20000) + "\n"  # too deep for 3.11-3.13; 3.10 parses it
    (tmp_path / "deep.py").write_text(deep, encoding="utf-8")
    (tmp_path / "train.py").write_text(HEAD + BARRIER, encoding="utf-8")
    p = subprocess.run([str(EXE), "check", str(tmp_path)], capture_output=True, text=True, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"{tmp_path / 'train.py'}:5:5: FSD003" in p.stdout
    assert ("FSD000" in p.stdout) == (not parses(deep))


LATIN1 = ("#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n" + HEAD + 'print("caf\xe9 d\xe9j\xe0 vu")\n' + BARRIER).encode(
    "latin-1"
)


def test_a_latin1_file_with_a_coding_cookie_is_read_as_python_reads_it(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(LATIN1)
    text = read_source(LATIN1)
    assert "café déjà vu" in text
    (f,) = check_paths([str(path)])
    assert (f.code, f.line) == ("FSD003", barrier_line(text))
    assert codes(check_paths([str(path)])) == codes(check_source(text))


def test_other_encodings_and_a_bom():
    cp1252 = b"# coding: cp1252\nx = '\x93quoted\x94'\n"
    assert read_source(cp1252).splitlines()[1] == "x = '\u201cquoted\u201d'"
    assert read_source(b"\xef\xbb\xbfx = '\xc3\xa9'\n") == "x = 'é'\n"  # the BOM is not part of the text
    assert read_source(b"x = 1\r\ny = 2\r\n") == "x = 1\r\ny = 2\r\n"  # newlines as they are: the same lines


@pytest.mark.parametrize(
    "data, line, words",
    [
        (b"x = 1\ny = '\xe9'\n", 2, "not valid utf-8, and no coding cookie"),
        (b"# coding: ascii\nx = '\xe9'\n", 2, "not valid ascii, the encoding its coding cookie declares"),
        (b"# coding: no-such-codec\nx = 1\n", 1, "no-such-codec"),
        (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", 1, "encoding problem"),
    ],
    ids=["utf-8 by default", "ascii cookie", "unknown codec", "bom and another cookie"],
)
def test_an_undecodable_file_is_its_own_finding_and_the_others_are_checked(tmp_path, data, line, words):
    with pytest.raises(UndecodableSource, match=words):
        read_source(data)
    (tmp_path / "a_bad.py").write_bytes(data)
    (tmp_path / "b_good.py").write_text(HEAD + BARRIER, encoding="utf-8")
    found = check_paths([str(tmp_path)])
    assert [(Path(f.path).name, f.code, f.line) for f in found] == [("a_bad.py", "FSD000", line), ("b_good.py", "FSD003", 5)]
    assert "cannot decode it as Python does" in found[0].message and words in found[0].message
    assert check_paths([str(tmp_path)], select=["FSD003"]) == found[1:]  # FSD000 follows --select like any code
    p = subprocess.run([str(EXE), "check", str(tmp_path)], capture_output=True, text=True, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr and "b_good.py:5:5: FSD003" in p.stdout


def test_an_undecodable_script_on_standard_input(tmp_path):
    p = subprocess.run([str(EXE), "check", "-"], input=b"x = '\xff'\n", capture_output=True, check=False)
    assert p.returncode == 1 and b"Traceback" not in p.stderr
    assert b"-:1:1: FSD000 file not analysed: cannot decode it as Python does" in p.stdout
    p = subprocess.run([str(EXE), "check", "-"], input=LATIN1, capture_output=True, check=False)
    assert p.returncode == 1 and b"FSD003" in p.stdout and b"FSD000" not in p.stdout


BIG = HEAD + "if rank == 0:\n" + "    dist.barrier()\n" * 300  # thousands of analysis steps: past any tiny budget


def test_the_budget_ends_in_one_clear_finding(monkeypatch, tmp_path):
    assert len(check_source(BIG)) == 300
    monkeypatch.setenv(knobs.CHECK_BUDGET, "0.000001")
    (f,) = check_source(BIG, "big.py")
    assert (f.code, f.severity, f.line, f.path) == ("FSD000", "error", 1, "big.py")
    assert "budget of 1e-06 s per file" in f.message and knobs.CHECK_BUDGET in f.message
    assert codes(check_tree(ast.parse(BIG))) == [("FSD000", 1)]  # the flake8 plugin's door
    assert check_source(BIG, select=["FSD003"]) == []
    (tmp_path / "big.py").write_text(BIG, encoding="utf-8")
    env = {**os.environ, knobs.CHECK_BUDGET: "0.000001"}
    p = subprocess.run([str(EXE), "check", str(tmp_path / "big.py")], capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr and p.stdout.count("FSD000") == 1 and "FSD003" not in p.stdout
    monkeypatch.setenv(knobs.CHECK_BUDGET, "60")
    assert len(check_source(BIG)) == 300


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan"])
def test_a_bad_budget_is_bad_input(monkeypatch, tmp_path, value):
    monkeypatch.setenv(knobs.CHECK_BUDGET, value)
    with pytest.raises(InvalidArgument, match="expected a positive number of seconds"):
        check_source("x = 1\n")
    (tmp_path / "x.py").write_text("x = 1\n", encoding="utf-8")
    env = {**os.environ, knobs.CHECK_BUDGET: value}
    p = subprocess.run([str(EXE), "check", str(tmp_path / "x.py")], capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr and knobs.CHECK_BUDGET in p.stderr


def test_http_and_the_tool_share_it(monkeypatch, fake_verifier):
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app
    from fsdp_skill.adapters.tools import invoke

    long_expr = HEAD + "x = " + " + ".join(["a"] * 1000) + "\n" + BARRIER
    deep = HEAD + "x = " + " + ".join(["a"] * 20000) + "\n"  # 120 KB: inside /v1/check's limit
    cookie = LATIN1.decode("latin-1")  # a str that still carries its cookie: parsed as the text it is
    with TestClient(create_app(verifier=fake_verifier)) as client:

        def post(code: str) -> list[tuple[str, int]]:
            r = client.post("/v1/check", json={"code": code})
            assert r.status_code == 200, r.text
            return [(f["code"], f["line"]) for f in r.json()["findings"]]

        assert post(long_expr) == [("FSD003", barrier_line(long_expr))]
        assert post(deep) == ([] if parses(deep) else [("FSD000", 1)])
        assert post(cookie) == [("FSD003", barrier_line(cookie))]
        monkeypatch.setenv(knobs.CHECK_BUDGET, "0.000001")
        assert post(BIG) == [("FSD000", 1)]
        assert [(f.code, f.line) for f in invoke("check_script", {"code": BIG}).findings] == [("FSD000", 1)]
        monkeypatch.setenv(knobs.CHECK_BUDGET, "abc")
        r = client.post("/v1/check", json={"code": "x = 1\n"})
        assert r.status_code == 400 and knobs.CHECK_BUDGET in r.text
    monkeypatch.delenv(knobs.CHECK_BUDGET)
    assert [(f.code, f.line) for f in invoke("check_script", {"code": long_expr}).findings] == codes(
        check_code(long_expr).findings
    )


NEWER_CODE = {
    "type_alias": "import torch.distributed as dist\n\ntype Batch = list[int]\ntype Pair[T] = tuple[T, T]\n",
    "generic_class": "class Box[T: (int, str)](object):\n    def __init__(self, v: T):\n        self.v = v\n",
    "generic_def": "async def first[T, *Ts, **P](xs: list[T]) -> T:\n    return xs[0]\n",
}
BARRIER_UNDER_RANK = (
    "import torch.distributed as dist\n\n\ndef main[T](x: T) -> None:\n"
    "    dist.init_process_group('gloo')\n    if dist.get_rank() == 0:\n        dist.barrier()\n"
    "    dist.destroy_process_group()\n"
)


@pytest.mark.parametrize("case", sorted(NEWER_CODE))
def test_pep695_code_is_analysed_on_an_older_python(case):
    """Python 3.12's type aliases and generic classes and functions parse on the checker's Python too (lowered line by
    line): no FSD000, and a real mistake in such a file is found at its own line."""
    assert [f.code for f in check_source(NEWER_CODE[case], path="new.py")] == []
    found = check_source(BARRIER_UNDER_RANK, path="train.py")
    assert [(f.code, f.line) for f in found] == [("FSD003", 7)]


def test_a_pep701_fstring_is_not_called_a_broken_file():
    """An f-string only Python 3.12 accepts is one FSD000 at info level that names it and the Python it needs, not an
    error saying the file does not parse (on 3.12 or newer the file is simply analysed)."""
    found = check_source('name = "a"\nprint(f"{"nested" + name}")\n', path="new.py")
    if sys.version_info >= (3, 12):
        assert found == []
        return
    assert [(f.code, f.severity, f.line) for f in found] == [("FSD000", "info", 2)]
    assert "PEP 701" in found[0].message and "Python 3.12" in found[0].message and "does not parse" not in found[0].message


@pytest.mark.parametrize(
    "code", ["x = 1\ndef f(:\n    pass\n", "type = 3\nprint(type(\n", "class A[:\n    pass\n", "type X[T = 1\n"]
)
def test_a_real_syntax_error_is_still_an_error(code):
    """A broken file is still FSD000 at error level ("does not parse"), also near the words a newer construct uses."""
    found = check_source(code, path="broken.py")
    assert [(f.code, f.severity) for f in found] == [("FSD000", "error")]
    assert "does not parse with Python" in found[0].message


class _AstWith:
    """The ``ast`` module with another ``parse``: what the checker's modules see (pytest's own ``ast.parse`` stays)."""

    def __init__(self, parse):
        self.parse = parse

    def __getattr__(self, name):
        return getattr(ast, name)


def patch_parse(monkeypatch, parse) -> None:
    """Give every module of the tool that parses code this ``parse`` as its ``ast.parse``."""
    import importlib

    for name in ("fsdp_skill.core.parsing", "fsdp_skill.core.check.syntax", "fsdp_skill.core.code_blocks"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "ast"):
            monkeypatch.setattr(module, "ast", _AstWith(parse))


class RacyParse:
    """``ast.parse`` as CPython 3.11.0-3.11.7 and 3.12.0-3.12.1 behave under threads (gh-106905): a parse that overlaps
    another one in the same interpreter may raise ``SystemError: AST constructor recursion depth mismatch``. Here it
    always does, and every parse is held open for a moment, so two threads parsing at once always collide."""

    def __init__(self, real):
        self.real, self.inside, self.most, self.lock = real, 0, 0, threading.Lock()

    def __call__(self, *args, **kwargs):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            time.sleep(0.02)
            with self.lock:
                clash = self.most > 1 and self.inside > 1
            if clash:
                raise SystemError("AST constructor recursion depth mismatch (before=33, after=29)")
            return self.real(*args, **kwargs)
        finally:
            with self.lock:
                self.inside -= 1


def test_concurrent_http_checks_never_parse_at_once(monkeypatch, fake_verifier):
    """Eight /v1/check requests at once (FastAPI runs them in worker threads): each one's findings, no 500. Parses
    that overlap in one interpreter meet CPython 3.11.7's SystemError for valid code; /v1/check parses in its one
    worker process, one check at a time (the parses of the server's own threads, e.g. ask's fenced code and MCP's
    check_script, keep the lock that test_threads_of_one_interpreter_never_parse_at_once checks)."""
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http import check_worker
    from fsdp_skill.adapters.http.app import create_app

    src = HEAD + BARRIER
    start = threading.Barrier(8)
    with TestClient(create_app(verifier=fake_verifier)) as client:

        def post(_: int) -> tuple[int, list]:
            start.wait()
            r = client.post("/v1/check", json={"code": src})
            return r.status_code, [(f["code"], f["line"]) for f in r.json()["findings"]] if r.status_code == 200 else r.text

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(post, range(8)))
        workers = [w for w in list(check_worker._LIVE) if w.pids()]
        assert len(workers) == 1 and len(workers[0].pids()) == 1  # one process, one check at a time
    ok = [g for g in got if g[0] == 200]
    assert ok and ok == [(200, [("FSD003", barrier_line(src))])] * len(ok)
    assert all(g[0] == 429 and "queue_full" in g[1] for g in got if g[0] != 200)  # the gate's overflow (next test)


def test_threads_of_one_interpreter_never_parse_at_once(monkeypatch):
    """Eight threads checking code at once in one interpreter (MCP's check_script, ask's fenced code in the HTTP
    server's threads): each gets its findings; a lock around the checker's parses keeps them from overlapping, which
    CPython 3.11.7 answers with a SystemError for valid code (RacyParse)."""
    racy = RacyParse(ast.parse)
    patch_parse(monkeypatch, racy)
    src = HEAD + BARRIER
    start = threading.Barrier(8)

    def run(_: int) -> list:
        start.wait()
        return codes(check_code(src).findings)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        got = list(pool.map(run, range(8)))
    assert got == [[("FSD003", barrier_line(src))]] * 8
    assert racy.most == 1  # never two parses at once


def test_http_checks_run_one_at_a_time_and_the_overflow_is_429_at_once(monkeypatch, fake_verifier):
    """/v1/check: one analysis at a time (they share one interpreter lock; several at once starve the event loop), a
    few wait without a thread each, the next is refused with 429 queue_full and Retry-After at once; /healthz and
    invalid bodies are answered meanwhile."""
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http import app as http_app
    from fsdp_skill.adapters.http.check_worker import CheckWorker

    entered, release = threading.Event(), threading.Event()
    real = CheckWorker.check  # the queue's job: it waits for the worker process's answer in a server thread

    def slow_check(self, *args, **kwargs):
        entered.set()
        assert release.wait(30)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CheckWorker, "check", slow_check)
    monkeypatch.setattr(http_app, "CHECK_WAITING", 0)
    src = HEAD + BARRIER
    with TestClient(http_app.create_app(verifier=fake_verifier)) as client:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            first = pool.submit(client.post, "/v1/check", json={"code": src})
            assert entered.wait(30)
            busy = client.post("/v1/check", json={"code": src})
            assert busy.status_code == 429 and busy.json()["code"] == "queue_full" and int(busy.headers["Retry-After"]) >= 1
            assert client.get("/healthz").status_code == 200
            assert client.post("/v1/check", json={"code": ""}).status_code == 422  # validated before the gate
            release.set()
            assert first.result(30).status_code == 200
        after = client.post("/v1/check", json={"code": src})  # the gate is free again
        assert after.status_code == 200 and [f["code"] for f in after.json()["findings"]] == ["FSD003"]


def test_the_parser_race_is_retried_then_a_finding_never_a_500(monkeypatch, fake_verifier):
    """A parse that still meets the race (another library parsing outside the lock) is tried again; one that meets it
    every time is one FSD000 naming the SystemError, through check_source and ask's fenced code (/v1/check parses in
    its worker process, one check at a time: test_check_worker.py)."""
    from fsdp_skill.core.code_blocks import code_blocks

    real, calls = ast.parse, []

    def once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=9, after=18)")
        return real(*args, **kwargs)

    src = HEAD + BARRIER
    patch_parse(monkeypatch, once)
    assert codes(check_source(src)) == [("FSD003", barrier_line(src))]

    def always(*args, **kwargs):
        raise SystemError("AST constructor recursion depth mismatch (before=9, after=18)")

    patch_parse(monkeypatch, always)
    (f,) = check_source(src, "train.py")
    assert (f.code, f.severity, f.line) == ("FSD000", "error", 1)
    assert "parser failed on it (SystemError: AST constructor recursion depth mismatch" in f.message
    assert code_blocks(f"why does this hang?\n```python\n{src}```\n") == []  # not taken for code, and no traceback


def test_http_check_takes_a_display_name_and_refuses_one_that_is_not_unicode(fake_verifier):
    """``/v1/check`` reads no file: its ``path`` is a name to show.  A name with an unpaired surrogate (what a file
    name that is not UTF-8 becomes, sent as a ``\\udce9`` escape) is a 422 naming the field, never a 500 when the
    findings are encoded; a non-ASCII name comes back as it was sent."""
    from fastapi.testclient import TestClient

    from fsdp_skill.adapters.http.app import create_app

    code = HEAD + BARRIER
    with TestClient(create_app(verifier=fake_verifier)) as client:
        body = '{"code": ' + json.dumps(code) + ', "path": "caf\\udce9.py"}'
        r = client.post("/v1/check", content=body.encode(), headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["code"] == "invalid_request" and "body.path" in r.json()["error"]
        r = client.post("/v1/check", json={"code": code, "path": "café.py"})
        assert r.status_code == 200 and [(f["path"], f["code"]) for f in r.json()["findings"]] == [("café.py", "FSD003")]
