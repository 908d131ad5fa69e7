"""The target interpreter (``--python PATH`` / ``$FSDP_SKILL_PYTHON``): bad paths are one-line usage errors,
an interpreter without torch still gets answers (signatures and verdicts reported absent, with the reason),
and a real verification under another interpreter that cannot import any of the tool's packages names
that interpreter in its verdict and never shares cache entries with the tool's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from fsdp_skill.adapters.http.app import create_app
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.main import main
from fsdp_skill.runtime import cache, framing, knobs, probe, procfs, target

RUNTIME = Path(target.__file__).resolve().parent
NO_TORCH = (
    "torch is not installed in this environment ({}); install fsdp-skill[torch] or pass --python PATH to a Python that has torch"
)
# Packages of the tool's own environment that must never be needed under the target interpreter.
TOOL_PACKAGES = (
    "fsdp_skill",
    "pydantic",
    "pydantic_core",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "rich",
    "yaml",
    "rank_bm25",
    "markdown_it",
    "mdit_py_plugins",
    "platformdirs",
    "httpx",
    "anyio",
)

ISOLATE = f"""\
import os, runpy, sys

class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {TOOL_PACKAGES!r}:
            raise ImportError(name + " is not installed in the target environment")
        return None

sys.meta_path.insert(0, _Block())
args = sys.argv[1:]
while args[:1] and args[0] in ("-I", "-u", "-B", "-E", "-s"):  # interpreter options (this one runs with -I already)
    args = args[1:]
if args[:1] == ["-m"]:
    sys.argv = args[1:]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
    runpy.run_path(args[0], run_name="__main__")
"""


@pytest.fixture(scope="module")
def no_torch_python(tmp_path_factory) -> str:
    """The interpreter of a fresh venv with no packages at all (no torch, no fsdp_skill)."""
    venv = tmp_path_factory.mktemp("no-torch-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    return str(venv / "bin" / "python")


@pytest.fixture(scope="module")
def isolated_python(tmp_path_factory) -> str:
    """Another interpreter path with torch: this one, started with ``-I`` and an import hook that makes every
    package of the tool's environment but torch's unimportable."""
    folder = tmp_path_factory.mktemp("isolated-python")
    (folder / "isolate.py").write_text(ISOLATE)
    wrapper = folder / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I "{folder / "isolate.py"}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def _run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _bad_paths(tmp_path) -> dict[str, tuple[str, str]]:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    shell = tmp_path / "not-python"
    shell.write_text("#!/bin/sh\necho 'this is not python' >&2\nexit 3\n")
    shell.chmod(0o755)
    echo = tmp_path / "echoes-json"  # stdout that looks like the probe's result, but no Python ran
    echo.write_text('#!/bin/sh\necho \'{"x": 1}\'\necho \'{"python_version": [3, 11, 0], "torch_version": null}\'\n')
    echo.chmod(0o755)
    return {
        "missing": (str(tmp_path / "nope" / "python"), "no such file"),
        "directory": (str(tmp_path), "not an executable file"),
        "not-executable": (str(text), "not an executable file"),
        "not-python": (str(shell), "not a Python interpreter"),
        "prints-json": (str(echo), "not a Python interpreter"),
    }


@pytest.mark.parametrize("case", ["missing", "directory", "not-executable", "not-python", "prints-json"])
@pytest.mark.parametrize("command", [["verify", "join/ddp-join"], ["ask", "fully_shard bf16"], ["mcp"], ["serve"]])
def test_bad_python_is_a_one_line_usage_error(case, command, tmp_path, capsys):
    path, why = _bad_paths(tmp_path)[case]
    code, out, err = _run([*command, "--python", path], capsys)
    assert code == 2
    assert err.startswith(f"fsdp-skill: error: --python {path}: {why}") and err.count("\n") == 1, err
    assert "Traceback" not in err and out == ""
    assert os.environ.get(knobs.PYTHON) is None  # a rejected interpreter is not selected


def test_bad_python_with_json_prints_the_error_object(tmp_path, capsys):
    path = str(tmp_path / "missing-python")
    code, out, err = _run(["verify", "join/ddp-join", "--json", "--python", path], capsys)
    assert code == 2 and json.loads(out) == {"error": f"--python {path}: no such file", "code": "bad_input"}


def test_bad_environment_variable_names_itself(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(knobs.PYTHON, str(tmp_path / "gone"))
    code, out, err = _run(["ask", "fully_shard bf16", "--no-verify"], capsys)
    assert (code, err) == (2, f"fsdp-skill: error: {knobs.PYTHON} {tmp_path / 'gone'}: no such file\n")


def test_probe_runs_with_the_standard_library_alone(no_torch_python):
    proc = subprocess.run([no_torch_python, "-I", str(RUNTIME / "probe.py")], capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout)
    assert data["torch_version"] is None and data["torch_dir"] is None and data["cuda_build"] is False
    assert target.facts(no_torch_python).torch_version is None


def test_in_process_facts_equal_the_probe_subprocess():
    proc = subprocess.run([sys.executable, str(RUNTIME / "probe.py")], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == json.loads(json.dumps(probe.static_facts()))


def _wrapper(folder: Path, name: str, body: str) -> str:
    """A ``--python`` wrapper script: ``body`` is shell, ``$PY`` this interpreter."""
    path = folder / name
    path.write_text(f'#!/bin/sh\nPY="{sys.executable}"\n{body}\n')
    path.chmod(0o755)
    return str(path)


# a wrapper's own output around the real interpreter: JSON lines shaped like each child's result, a line without
# its newline (the result then follows on the same line), and JSON after the interpreter exits
NOISY = """\
echo '{"x": 1}'
echo '{"ok": true, "peak_bytes": 1}'
echo '[{"name": "torch.nn.Module", "available": false, "signature": null, "summary": null}]'
printf 'no newline: '
"$PY" "$@"
code=$?
echo '{"torch_version": null, "python_version": [3, 9, 0]}'
exit $code"""


def test_a_wrapper_that_prints_json_gives_the_interpreter_s_facts(tmp_path):
    """The probe's result is the line framed with this run's nonce: what the wrapper prints around it, even JSON
    shaped like it (the last line here once gave ``KeyError: 'python_version'``), is not read."""
    noisy = _wrapper(tmp_path, "noisy-python", NOISY)
    assert target.check_python(noisy) == noisy
    found, own = target.facts(noisy), target.facts(sys.executable)
    assert found.python == noisy
    assert (found.python_version, found.torch_version, found.torch_dir) == (own.python_version, own.torch_version, own.torch_dir)
    assert (found.cuda_build, found.nccl_build) == (own.cuda_build, own.nccl_build)


@pytest.mark.torch
def test_a_wrapper_that_prints_json_gives_the_interpreter_s_signatures(tmp_path):
    from fsdp_skill.core import apis

    noisy = _wrapper(tmp_path, "noisy-python", NOISY)
    names = ["torch.distributed.init_process_group", "torch.nn.Module"]
    assert apis.introspect_in(noisy, names) == [apis.introspect(n) for n in names]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("echo 'junk'", "not a Python interpreter (running a Python script gave: it printed 'junk')"),
        ("echo 'junk' >&2; exit 1", "not a Python interpreter (running a Python script gave: junk)"),
        (
            'echo "@fsdp-skill-result:$3 {\\"torch_version\\": null}"',
            "the probe script's result is malformed (no 'python_version')",
        ),
        ('echo "@fsdp-skill-result:$3 [1, 2]"', "the probe script's result is malformed (a JSON list, not an object)"),
        ('echo "@fsdp-skill-result:$3 not json"', "not a Python interpreter"),
    ],
    ids=["junk", "junk-on-stderr", "framed-without-a-key", "framed-list", "framed-not-json"],
)
def test_a_wrapper_without_a_usable_result_is_one_line_naming_it(body, why, tmp_path, capsys):
    """No framed result, or a malformed one: one usage line naming the interpreter (never a KeyError)."""
    path = _wrapper(tmp_path, "bad-python", body)
    with pytest.raises(InvalidArgument) as caught:
        target.facts(path)
    assert str(caught.value).startswith(f"--python {path}: {why}") and "\n" not in str(caught.value)
    code, out, err = _run(["ask", "fully_shard bf16", "--no-verify", "--python", path], capsys)
    assert (code, out) == (2, "") and err == f"fsdp-skill: error: {caught.value}\n"


def test_the_file_run_children_frame_what_framing_reads():
    """probe.py spells the framed line itself (no import of the tool): the parent reads it (introspect.py's, which
    needs torch, below)."""
    nonce = framing.new_nonce()
    proc = subprocess.run([sys.executable, str(RUNTIME / "probe.py"), framing.FLAG, nonce], capture_output=True, text=True)
    assert framing.read(proc.stdout, nonce).results == [json.loads(json.dumps(probe.static_facts()))]
    assert framing.read(proc.stdout, framing.new_nonce()).results == []  # another run's nonce: not this result


@pytest.mark.torch
def test_introspect_frames_what_framing_reads():
    """introspect.py (run where torch imports) spells the framed line itself: the parent reads it."""
    nonce = framing.new_nonce()
    proc = subprocess.run(
        [sys.executable, str(RUNTIME / "introspect.py"), framing.FLAG, nonce, "torch.no_such_api"], capture_output=True, text=True
    )
    assert [r["available"] for r in framing.read(proc.stdout, nonce).results[0]] == [False]


def test_framing_reads_only_lines_with_the_nonce():
    nonce = "ab" * 16
    text = f'{{"ok": true}}\nhello {framing.TAG}{nonce} {{"ok": 1}} trailing\n{framing.TAG}{"cd" * 16} {{"ok": 2}}\n'
    text += f"{framing.TAG}{nonce} {{broken\n\n"
    framed = framing.read(text, nonce)
    assert framed.results == [{"ok": 1}] and framed.malformed == 1
    assert framed.other == ['{"ok": true}', "hello", f'{framing.TAG}{"cd" * 16} {{"ok": 2}}']
    assert framing.last_words(framed, "", 0) == f"it printed '{framing.TAG}{'cd' * 16} {{\"ok\": 2}}'"
    assert framing.last_words(framed, "a\nlast words\n\n", 1) == "last words"
    assert framing.last_words(framing.read("", nonce), "", 3) == "exit code 3 and no output"


def test_ask_without_torch_answers_and_reports_what_is_missing(no_torch_python, capsys):
    code, out, err = _run(
        ["ask", "--json", "--python", no_torch_python, "How do I use bf16 mixed precision with fully_shard?"], capsys
    )
    assert code == 0, err
    answer = json.loads(out)
    reason = NO_TORCH.format(no_torch_python)
    assert answer["sections"] and answer["torch_version"] is None and answer["python"] == no_torch_python
    assert answer["api"] and all(a["available"] is False and a["reason"] == reason for a in answer["api"])
    verdicts = [sn["verification"] for s in answer["sections"] for sn in s["snippets"]]
    assert verdicts and all(
        v["status"] == "unverified" and v["available"] is False and v["reason"] == reason and v["python"] == no_torch_python
        for v in verdicts
    )


@pytest.fixture(scope="module")
def broken_torch_python(tmp_path_factory) -> str:
    """A venv whose torch is installed (package metadata says 2.13.0) but fails to import."""
    venv = tmp_path_factory.mktemp("broken-torch-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text('raise ImportError("libtorch_cpu.so: cannot open shared object file")\n')
    (site / "torch-2.13.0.dist-info").mkdir()
    (site / "torch-2.13.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n")
    return str(venv / "bin" / "python")


def test_ask_with_a_broken_torch_answers_and_caches_no_missing_apis(broken_torch_python, capsys, fsdp_skill_home):
    code, out, err = _run(
        ["ask", "--json", "--python", broken_torch_python, "How do I use bf16 mixed precision with fully_shard?"], capsys
    )
    assert code == 0, err
    answer = json.loads(out)
    assert answer["sections"] and answer["torch_version"] == "2.13.0"
    assert answer["api"] and all(
        a["available"] is False and "torch failed to import: ImportError: libtorch_cpu.so" in a["reason"] for a in answer["api"]
    )
    verdicts = [sn["verification"] for s in answer["sections"] for sn in s["snippets"]]
    assert verdicts and all(
        v["status"] == "unverified" and v["reason"].startswith("verification could not run here") for v in verdicts
    )
    assert not list(fsdp_skill_home.glob("api-*.json"))  # a broken torch is not "every API is missing"
    code, out, err = _run(["ask", "--python", broken_torch_python, "How do I use bf16 mixed precision with fully_shard?"], capsys)
    flat = " ".join(out.split())  # the terminal view wraps lines
    assert code == 0 and "torch failed to import" in flat and "missing from the installed torch" not in flat


@pytest.mark.parametrize(("version", "expected"), [("2.7.18", "Python 2.7 is too old")])
def test_python_2_is_named_too_old(version, expected, capsys):
    python2 = Path(os.path.expanduser("~/.pyenv/versions")) / version / "bin" / "python2.7"
    if not python2.exists():
        pytest.skip(f"no Python {version} on this machine")
    code, out, err = _run(["verify", "--python", str(python2), "join/ddp-join"], capsys)
    assert code == 2 and expected in err


def test_tilde_in_python_is_expanded(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HOME", str(Path(sys.executable).parent))
    assert target.check_python("~/" + Path(sys.executable).name) == os.path.abspath(sys.executable)


def test_verify_without_torch_exits_2_saying_how_to_enable_it(no_torch_python, capsys):
    code, out, err = _run(["verify", "--python", no_torch_python, "join/ddp-join"], capsys)
    assert (code, out) == (2, "")
    assert err == f"fsdp-skill: error: {NO_TORCH.format(no_torch_python)}\n"


def test_http_reports_missing_torch_and_a_bad_interpreter_as_json(no_torch_python, monkeypatch, tmp_path):
    monkeypatch.setenv(knobs.PYTHON, no_torch_python)
    with TestClient(create_app()) as client:
        r = client.post("/v1/ask", json={"question": "How do I use bf16 mixed precision with fully_shard?", "k": 1})
        assert r.status_code == 200
        assert {a["available"] for a in r.json()["api"]} == {False}
        r = client.post("/v1/snippets/join/ddp-join/verify", params={"force": "true"})
        assert r.status_code == 400 and r.json() == {"error": NO_TORCH.format(no_torch_python), "code": "bad_input"}
        monkeypatch.setenv(knobs.PYTHON, str(tmp_path / "gone"))
        r = client.post("/v1/ask", json={"question": "fully_shard bf16", "k": 1, "verify": False})
        assert r.status_code == 400
        assert r.json() == {"error": f"{knobs.PYTHON} {tmp_path / 'gone'}: no such file", "code": "bad_input"}


def test_cache_key_separates_interpreters():
    keys = {cache.cache_key("ab" * 32, 2, "gloo", "2.13.0+cpu", p) for p in ("/a/bin/python", "/b/bin/python")}
    assert len(keys) == 2
    assert cache.cache_key("ab" * 32, 2, "gloo", "2.13.0+cpu", "/a") != cache.cache_key("ab" * 32, 2, "gloo", "2.14.0", "/a")


SCRIPT = textwrap.dedent("""\
    import os, sys
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    try:
        assert "fsdp_skill" not in sys.modules and "pydantic" not in sys.modules
        t = torch.ones(1) * (dist.get_rank() + 1)
        dist.all_reduce(t)
        assert t.item() == 3.0, t
    finally:
        dist.destroy_process_group()
""")


@pytest.mark.slow
def test_verify_under_another_interpreter_names_it_and_needs_only_torch(isolated_python, capsys):
    from fsdp_skill.runtime import cached_verdict, verify_code

    verdict = verify_code(SCRIPT, world_size=2, backend="gloo", timeout=120, python=isolated_python)
    assert verdict.status == "passed", verdict.reason
    assert verdict.python == isolated_python
    # the ranks report torch.__version__ ('2.14.1+cu130'), the probe the package metadata ('2.14.1' for PyPI's CUDA wheel)
    assert cache.same_torch(verdict.torch_version, target.facts().torch_version), (verdict.torch_version, target.facts())
    assert (verdict.device_count, verdict.available) == (0, True)
    assert cached_verdict(SCRIPT, backend="gloo", python=isolated_python).cached is True
    assert cached_verdict(SCRIPT, backend="gloo") is None  # the tool's own interpreter: another environment
    # the CLI: one knowledge snippet; API signatures read under that interpreter too
    code, out, err = _run(["verify", "--python", isolated_python, "join/ddp-join", "--json"], capsys)
    assert code == 0, err
    (item,) = json.loads(out)
    assert (item["status"], item["python"], item["launcher"]) == ("passed", isolated_python, "warm")
    code, out, err = _run(
        ["ask", "--json", "--no-verify", "--python", isolated_python, "How do I use bf16 mixed precision with fully_shard?"],
        capsys,
    )
    api = json.loads(out)["api"]
    assert code == 0 and api and all(a["available"] and a["signature"] for a in api), api


@pytest.mark.slow
def test_stdio_mcp_server_from_readme_config_verifies_under_the_given_python(isolated_python, tmp_path):
    import asyncio

    from mcp import Client, StdioServerParameters

    line = next(
        ln
        for ln in (RUNTIME.parent / "README.md").read_text().splitlines()
        if ln.startswith('{"mcpServers"') and "--python" in ln
    )
    cfg = json.loads(line)["mcpServers"]["fsdp-skill"]
    assert cfg["args"] == ["mcp", "--python", "/path/to/train-venv/bin/python"]
    args = [isolated_python if a == "/path/to/train-venv/bin/python" else a for a in cfg["args"]]
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name(cfg["command"])), args=args, env={"FSDP_SKILL_HOME": str(tmp_path / "home")}
    )

    async def go():
        async with Client(params) as client:
            return await client.call_tool("verify_snippet", {"id": "join/ddp-join"})

    res = asyncio.run(go())
    assert not res.is_error, res
    verdict = res.structured_content["verification"]
    assert (verdict["status"], verdict["python"]) == ("passed", isolated_python), verdict


@pytest.mark.parametrize("command", [["verify", "join/ddp-join"], ["check", "--run"]])
def test_a_hanging_python_is_given_up_after_the_commands_own_timeout(command, tmp_path, capsys):
    """A ``--python`` that never answers the probe fails after ``--timeout`` seconds (here 1), not after the
    probe's 60-second default; the limit is the command's, so a later command without one has the default."""
    hang = tmp_path / "hanging-python"
    pid_file = tmp_path / "sleep.pid"  # the wrapper's own child: killed with it, not left to init
    hang.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {pid_file}\nwait\n")
    hang.chmod(0o755)
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    argv = [*command, *([str(script)] if command[0] == "check" else []), "--timeout", "1", "--python", str(hang)]
    try:
        code, out, err = _run(argv, capsys)
        assert code == 2 and out == ""
        assert err == f"fsdp-skill: error: --python {hang}: no answer within 1 s to a probe script; is it a Python interpreter?\n"
    finally:
        target.limit_probes(None)
    assert target._probe_limit[0] == target.PROBE_TIMEOUT_S
    sleeper = int(pid_file.read_text())  # killed at once; reaped by init or a subreaper shortly after
    assert _gone_or_zombie(sleeper), f"the probe's grandchild {sleeper} is still running"


def _gone_or_zombie(pid: int) -> bool:
    """Whether ``pid`` is gone, or a zombie (killed; reaped by init or a subreaper shortly after), within 5 s."""
    for _ in range(500):
        if not procfs.alive(pid):
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("answers", [False, True], ids=["hangs", "answers"])
def test_a_python_whose_child_leaves_its_session_with_the_pipe_is_not_waited_for(answers, tmp_path, capsys):
    """A ``--python`` wrapper whose child starts a session of its own (``setsid``) and keeps the probe's stdout open:
    the probe is given up after ``--timeout`` (it was waited for forever: the pipe never closed), or, when the
    interpreter answered and exited, its answer is used; the escaped child is killed either way (probe 29 N18)."""
    pid_file = tmp_path / "escaped.pid"
    wrapper = tmp_path / "python-wrapper"
    last = f'exec "{sys.executable}" "$@"' if answers else "sleep 300"
    wrapper.write_text(f"#!/bin/sh\nsetsid sh -c 'echo $$ > {pid_file}; exec sleep 300' &\nsleep 0.2\n{last}\n")
    wrapper.chmod(0o755)
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    started = time.monotonic()
    try:
        code, out, err = _run(["check", "--run", str(script), "--timeout", "3", "--python", str(wrapper)], capsys)
    finally:
        target.limit_probes(None)
    if answers:
        assert "no answer within" not in err, err
    else:
        assert code == 2 and "no answer within 3 s to a probe script" in err, err
    assert time.monotonic() - started < 60
    assert _gone_or_zombie(int(pid_file.read_text())), "the child that left the probe's session is still running"
