"""CLI: exit codes, the --json contract, bad input (no tracebacks), and no torch import on the cached path."""

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsdp_skill.main import main

HAVE_TORCH = importlib.util.find_spec("torch") is not None
# the installed torch's release as its package metadata says it ('2.13.0' of '2.13.0+cpu', '2.14.1' of the CUDA wheel)
TORCH_RELEASE = importlib.metadata.version("torch").split("+")[0] if HAVE_TORCH else None

ANSWER_KEYS = {"query", "language", "abstained", "reason", "topics", "sections", "api", "torch_version", "elapsed_ms"}
SECTION_KEYS = {"id", "title", "topic", "score", "text", "sources", "snippets"}
EXE = Path(sys.executable).with_name("fsdp-skill")


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ask_json_contract(capsys):
    code, out, _ = run_cli(capsys, "ask", "--json", "--no-verify", "How do I offload parameters to CPU with fully_shard?")
    assert code == 0
    ans = json.loads(out)
    assert ANSWER_KEYS <= set(ans)
    assert ans["abstained"] is False and ans["reason"] is None and ans["language"] == "en"
    assert 1 <= len(ans["sections"]) <= 3
    for s in ans["sections"]:
        assert SECTION_KEYS <= set(s)
        for sn in s["snippets"]:
            assert {"id", "code", "launch", "verification"} <= set(sn)
            assert sn["verification"]["status"] == "unverified"
    assert all({"id", "score"} == set(t) for t in ans["topics"])
    for a in ans["api"]:
        assert {"name", "signature", "summary", "available"} <= set(a)
    assert (
        ans["torch_version"].startswith(TORCH_RELEASE) if HAVE_TORCH else ans["torch_version"] is None
    )  # torch-free CI step: None


def test_ask_k_and_markdown(capsys):
    code, out, _ = run_cli(capsys, "ask", "-k", "5", "--json", "--no-verify", "Join uneven inputs")
    assert code == 0 and len(json.loads(out)["sections"]) == 5
    code, out, _ = run_cli(capsys, "ask", "--markdown", "--no-verify", "Join uneven inputs")
    assert code == 0 and out.startswith("# Join uneven inputs") and "Sources: https://docs.pytorch.org/" in out


def test_chinese_answer_shows_the_chinese_bodies_and_english_on_request(capsys):
    from fsdp_skill.core.knowledge.cards import load_knowledge

    kb = load_knowledge()
    code, out, _ = run_cli(capsys, "ask", "--markdown", "--no-verify", "不均匀输入怎么处理？")
    first = kb.sections[out.split("`", 2)[1]]  # the id line of section 1
    assert code == 0 and f"## 1. {first.title_zh}" in out and first.text_zh in out and first.text not in out
    assert "中文摘要" not in out  # the full body says it all
    code, out, _ = run_cli(capsys, "ask", "--markdown", "--no-verify", "--lang", "en", "不均匀输入怎么处理？")
    assert code == 0 and f"## 1. {first.title}" in out and first.text in out and first.text_zh not in out
    code, out, _ = run_cli(capsys, "ask", "--markdown", "--no-verify", "--lang", "zh", "How do I handle uneven inputs?")
    assert code == 0 and "## 1. " in out and out.count("中文摘要") == 0 and "输入" in out


def test_abstention_exit_code_and_reason(capsys):
    code, out, _ = run_cli(capsys, "ask", "--json", "--no-verify", "How do I center a div in CSS?")
    ans = json.loads(out)
    assert code == 3 and ans["abstained"] and ans["reason"] and ans["sections"] == []


@pytest.mark.parametrize(
    "question, phrase",
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("x" * 100_000, "limit is 32,768"),
        ("abc\x00\x01\x02def", "binary"),
        ("\udcff how to shard with fsdp", "unpaired surrogate"),
    ],  # argv $'\xff ...' arrives surrogate-escaped
    ids=["empty", "whitespace", "100kB", "binary", "lone surrogate"],
)
def test_bad_question_is_a_clear_error(capsys, question, phrase):
    code, out, err = run_cli(capsys, "ask", "--json", "--no-verify", question)
    assert code == 2
    assert phrase in err and "Traceback" not in err
    assert json.loads(out)["code"] == "bad_input"


def test_mixed_script_question_is_answered(capsys):
    code, out, _ = run_cli(capsys, "ask", "--json", "--no-verify", "FSDP2 的 reshard_after_forward 是什么意思？")
    ans = json.loads(out)
    assert code == 0 and ans["language"] in ("zh", "mixed")
    assert any("reshard_after_forward" in s["text"] for s in ans["sections"])


def test_bad_k_is_usage_error(capsys):
    code, _, err = run_cli(capsys, "ask", "-k", "0", "--no-verify", "Join")
    assert code == 2 and "k must be" in err
    with pytest.raises(SystemExit) as exc:
        main(["ask", "-k", "abc", "Join"])
    assert exc.value.code == 2


def test_show_section_and_unknown_id(capsys):
    code, out, _ = run_cli(capsys, "show", "--list")
    first = out.splitlines()[0].split("\t")[0]
    code, out, _ = run_cli(capsys, "show", first)
    assert code == 0 and out.startswith("## ") and "Sources: https://" in out
    code, _, err = run_cli(capsys, "show", "join/no-such-section")
    assert code == 2 and "unknown section id" in err


def test_console_script_stdin_and_binary_without_traceback(tmp_path):
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path)}
    p = subprocess.run(
        [str(EXE), "ask", "--json", "--no-verify", "-"], input=b"\xff\xfe\x00garbage", capture_output=True, env=env
    )
    assert p.returncode == 2 and b"Traceback" not in p.stderr and b"not UTF-8" in p.stderr
    tb = b'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\nRuntimeError: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 0\n'
    p = subprocess.run([str(EXE), "ask", "--json", "--no-verify", "-"], input=tb, capture_output=True, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["sections"][0]["topic"] == "debugging"


# What a cached `ask --json --no-verify` must not import (issue 22): one list, which benchmarks/bench_ask.py reads too
NOT_ON_THE_CACHED_ASK_PATH = tuple(
    line.strip()
    for line in (Path(__file__).parent / "data" / "cached_ask_not_imported.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)


@pytest.mark.parametrize(
    "question",
    [
        "How do I use MixedPrecisionPolicy?",
        "FSDP2 怎么开启 bf16 混合精度？",
        "What is the capital of France?",
        "RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.",
        "Why does this hang?\n```python\nimport torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n```",
    ],
    ids=["en", "zh", "abstains", "pasted error", "code"],
)
def test_cached_ask_path_imports_only_what_it_needs(tmp_path, question):
    """A second `ask --json --no-verify` (caches warm) in a fresh interpreter: sys.modules at exit holds none of
    NOT_ON_THE_CACHED_ASK_PATH, nor a submodule of one; the first run, which builds the caches, may import more."""
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path)}
    code = (
        "import json, sys, fsdp_skill.main\n"
        f"rc = fsdp_skill.main.main(['ask', '--json', '--no-verify', {question!r}])\n"
        f"bad = sorted(m for m in sys.modules if any(m == p or m.startswith(p + '.') for p in {NOT_ON_THE_CACHED_ASK_PATH!r}))\n"
        "print(json.dumps(bad), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert first.returncode in (0, 3), first.stderr
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert second.returncode == first.returncode, second.stderr
    assert json.loads(second.stdout)["query"] == question
    assert json.loads(second.stderr.strip().splitlines()[-1]) == [], "the cached ask path imported these"


def test_commands_table_names_the_adapter_of_every_subcommand():
    """main.COMMANDS lists every subcommand in --help order with the adapter that registers it; a parser built
    for one command registers only its adapter's subcommands (the others are bare names), with the same usage."""
    import argparse

    from fsdp_skill.main import COMMANDS, _register, build_parser

    def subcommands(parser):
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return action.choices

    full = build_parser()
    assert list(subcommands(full)) == list(COMMANDS)
    for adapter in set(COMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        _register(adapter, sub)
        assert sorted(sub.choices) == sorted(c for c, a in COMMANDS.items() if a == adapter), adapter
    for command, adapter in COMMANDS.items():
        partial = build_parser(command)
        assert partial.format_usage() == full.format_usage()
        for name, parser in subcommands(partial).items():
            # the chosen command's adapter registers its commands; the CLI adapter only the chosen one
            registered = name == command if adapter == "cli" else COMMANDS[name] == adapter
            assert (parser.format_help() == subcommands(full)[name].format_help()) is registered, (command, name)


# --------------------------------------------------------------------------- issue 12: bad inputs are one line
def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("make", ["file", "under a file", "read-only (access)"])
def test_unusable_state_dir_is_exit_1_one_line(tmp_path, monkeypatch, capsys, make):
    if make == "file":
        home = tmp_path / "home"
        home.write_text("not a directory")
    elif make == "under a file":
        (tmp_path / "f").write_text("x")
        home = tmp_path / "f" / "home"
    else:  # root ignores permission bits, so the check itself is made to see a read-only directory
        home = tmp_path / "home"
        home.mkdir()
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == home else real(p, mode, **kw))
    monkeypatch.setenv("FSDP_SKILL_HOME", str(home))
    code, out, err = run_cli(capsys, "ask", "--json", "--no-verify", "how to shard with fsdp")
    assert code == 1 and f"state directory {home}" in one_line(err) and "FSDP_SKILL_HOME" in err
    assert json.loads(out)["code"] == "state_error"
    code, _, err = run_cli(capsys, "show", "join/ddp-join")
    assert code == 1 and "state directory" in one_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_state_dir_is_exit_1(tmp_path, monkeypatch, capsys):
    home = tmp_path / "ro"
    home.mkdir()
    home.chmod(0o555)
    monkeypatch.setenv("FSDP_SKILL_HOME", str(home))
    code, _, err = run_cli(capsys, "show", "join/ddp-join")
    assert code == 1 and "is not writable" in one_line(err)


def test_cache_file_that_is_a_directory_is_a_miss(tmp_path):
    """Directories where api-*.json, the parsed knowledge and the router cache go: the answer still comes."""
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path)}
    argv = [str(EXE), "ask", "--json", "--no-verify", "fully_shard mixed precision"]
    assert subprocess.run(argv, capture_output=True, env=env).returncode == 0
    names = [p.name for p in tmp_path.glob("*.json")]
    assert len(names) >= (3 if HAVE_TORCH else 2)  # knowledge, router (and api-*.json with torch)
    for name in names:
        (tmp_path / name).unlink()
        (tmp_path / name).mkdir()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)  # a fresh process: nothing in memory
    assert p.returncode == 0 and json.loads(p.stdout)["sections"] and "Traceback" not in p.stderr, p.stderr


def test_ask_dash_with_stdin_closed(tmp_path):
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path)}
    p = subprocess.run(["sh", "-c", 'exec "$0" ask --json --no-verify - <&-', str(EXE)], capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "standard input, which is closed" in one_line(p.stderr)


@pytest.mark.parametrize(
    "argv, phrase",
    [
        (["verify", "/etc/passwd"], "is not a Python script (.py)"),
        (["verify", "--timeout", "inf", "join/ddp-join"], "positive number of seconds, at most 86400"),
        (["verify", "--timeout", "nan", "join/ddp-join"], "positive number of seconds, at most 86400"),
        (["verify", "--timeout", "-1", "join/ddp-join"], "positive number of seconds, at most 86400"),
        (["verify", "--timeout", "1e12", "join/ddp-join"], "positive number of seconds, at most 86400"),
        (["verify", "--world-size", "100000", "join/ddp-join"], "--world-size must be from 1 to 64"),
        (["verify", "--world-size", "0", "join/ddp-join"], "--world-size must be from 1 to 64"),
    ],
    ids=["not a .py", "timeout inf", "timeout nan", "timeout -1", "timeout 1e12", "world size 100000", "world size 0"],
)
def test_verify_bad_arguments_are_exit_2(capsys, fake_verifier, argv, phrase):
    code = main(argv, verifier=fake_verifier)
    assert code == 2 and phrase in one_line(capsys.readouterr().err) and fake_verifier.runs == []


def test_ask_on_an_ascii_only_stdout_escapes_what_it_cannot_encode(tmp_path):
    """``PYTHONIOENCODING=ascii:strict``: a Chinese answer prints (``\\uXXXX`` for what ASCII lacks), never a
    UnicodeEncodeError, and ``--json`` stays JSON that reads back the same text."""
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path), "PYTHONIOENCODING": "ascii:strict"}
    question = "FSDP 混合精度 怎么用"
    for view in ([], ["--markdown"], ["--json"]):
        p = subprocess.run([str(EXE), "ask", *view, "--no-verify", question], capture_output=True, env=env, timeout=300)
        assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr.decode(errors="replace")
        assert p.stdout.isascii() and p.stdout.strip()
    assert json.loads(p.stdout)["query"] == question
    assert "\\u6df7\\u5408" in p.stdout.decode("ascii")  # 混合, escaped inside a JSON string


def test_the_stdout_escape_is_json_escapes():
    from fsdp_skill.main import ESCAPE_ERRORS

    text = "naïve 混合 \U0001f600 caf\udce9.py"
    escaped = text.encode("ascii", ESCAPE_ERRORS).decode("ascii")
    assert escaped == "na\\u00efve \\u6df7\\u5408 \\ud83d\\ude00 caf\\udce9.py"
    assert json.loads(json.dumps(text, ensure_ascii=False).encode("ascii", ESCAPE_ERRORS)) == text


@pytest.mark.parametrize("view", [[], ["--json"], ["--markdown"]], ids=["terminal", "json", "markdown"])
def test_closed_pipe_exits_quietly(tmp_path, view):
    """``fsdp-skill ask ... | head -1``: the reader is gone before anything is written (read end closed first)."""
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path)}
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(
            [str(EXE), "ask", *view, "--no-verify", "how to shard with fsdp"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    finally:
        os.close(w)
    assert p.returncode == 0 and p.stderr == ""


# --------------------------------------------------------------------------- issue 12: listing ids
def test_show_list_json_sections_and_snippets(capsys):
    from fsdp_skill.core.knowledge.cards import load_knowledge

    kb = load_knowledge()
    code, out, _ = run_cli(capsys, "show", "--list", "--json")
    rows = json.loads(out)
    assert code == 0 and [r["id"] for r in rows] == list(kb.sections)
    assert set(rows[0]) == {"id", "title", "topic", "snippets"}
    assert sum(r["snippets"] for r in rows) == len(kb.snippets)
    code, out, _ = run_cli(capsys, "show", "--list", "--snippets")
    assert code == 0 and [ln.split("\t")[0] for ln in out.splitlines()] == list(kb.snippets)
    code, out, _ = run_cli(capsys, "show", "--list", "--snippets", "--json", "--topic", "join")
    rows = json.loads(out)
    assert rows and all(r["section"].startswith("join/") for r in rows)
    assert {r["id"] for r in rows} == {s.id for s in kb.snippets.values() if kb.section(s.section_id).topic == "join"}
    code, _, err = run_cli(capsys, "show", "--list", "--topic", "joinn")
    assert code == 2 and "did you mean join" in one_line(err)
    code, _, err = run_cli(capsys, "show", "--snippets")
    assert code == 2 and "--list" in one_line(err)


def test_verify_accepts_a_section_id(capsys, fake_verifier):
    from fsdp_skill.core.knowledge.cards import load_knowledge

    kb = load_knowledge()
    counts: dict[str, list[str]] = {}
    for s in kb.snippets.values():
        counts.setdefault(s.section_id, []).append(s.id)
    section, ids = max(((sec, ids) for sec, ids in counts.items() if ids != [sec]), key=lambda kv: len(kv[1]))
    assert main(["verify", "--json", section], verifier=fake_verifier) == 0
    assert [v["snippet_id"] for v in json.loads(capsys.readouterr().out)] == ids and fake_verifier.runs == ids
    empty = next(sec for sec in kb.sections if sec not in counts)
    assert main(["verify", empty], verifier=fake_verifier) == 2
    assert "has no runnable snippets" in one_line(capsys.readouterr().err)


def test_ask_says_what_the_record_holds_before_a_snippet_runs(capsys, fake_verifier):
    """Before an answer's snippets run (cache misses), ``ask`` prints what the compatibility record says for this torch,
    per snippet, on stderr; the first line comes before any run started, and a second, cached ask prints none of it."""
    from fsdp_skill.core.interpreter import torch_version
    from fsdp_skill.core.knowledge import compat
    from fsdp_skill.core.knowledge.cards import load_knowledge
    from fsdp_skill.core.verify.snippets import recorded_runs

    seen: list[str] = []

    def gate(jobs):  # what stderr held when the batch of runs started
        seen.append(capsys.readouterr().err)

    verifier = fake_verifier
    verifier.gate = gate
    code = main(["ask", "--json", "how do I use the Join context manager with uneven inputs?"], verifier=verifier)
    assert code == 0 and verifier.runs and len(seen) == 1
    before = seen[0]
    assert "before they run, the compatibility record:" in before and "verified" not in before
    kb = load_knowledge()
    version = torch_version()
    for sid in verifier.runs:
        spec = kb.snippets[sid]
        line = compat.for_torch(recorded_runs(spec, kb), version) or "no torch here to compare with"  # torch-free CI step
        assert f"  {sid}: {line}" in before
    capsys.readouterr()
    assert main(["ask", "--json", "how do I use the Join context manager with uneven inputs?"], verifier=verifier) == 0
    assert "compatibility record" not in capsys.readouterr().err and len(seen) == 1  # all cached: nothing runs


def test_ask_dash_refuses_an_endless_stdin(tmp_path):
    """``ask -`` reads at most 4 bytes per character of the question's limit: more is one line, exit 2, not a read
    to the end of an endless stream."""
    env = {**os.environ, "FSDP_SKILL_HOME": str(tmp_path)}
    p = subprocess.run([str(EXE), "ask", "--no-verify", "-"], input=b"a" * 200_000, capture_output=True, env=env, timeout=120)
    assert p.returncode == 2 and b"Traceback" not in p.stderr and b"more than a question's 32,768 characters" in p.stderr
