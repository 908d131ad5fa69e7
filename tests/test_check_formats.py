"""``check --output-format text|json|github|sarif``: GitHub workflow commands (escaped as the runner reads them),
a SARIF 2.1.0 log valid against the official schema (``tests/data/sarif/``, see its SOURCE.md), ``--json`` as
``json``; the pre-commit hook and the flake8 plugin unchanged by these options."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsdp_skill.adapters.flake8 import Plugin
from fsdp_skill.core.check import RULES, check_source
from fsdp_skill.core.check.models import Finding
from fsdp_skill.core.check.report import github_annotations, sarif_log
from fsdp_skill.main import main

ROOT = Path(__file__).parent.parent
DATA = Path(__file__).parent / "data"
BAD = DATA / "check" / "FSD043_bad.py"
SCHEMA = DATA / "sarif" / "sarif-schema-2.1.0.json"
EXE = Path(sys.executable).parent / "fsdp-skill"


def _validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def test_github_format_is_one_workflow_command_per_finding(capsys):
    assert main(["check", "--output-format", "github", str(BAD)]) == 1
    lines = capsys.readouterr().out.splitlines()
    found = check_source(BAD.read_text(), str(BAD))
    assert len(lines) == len(found) == 5
    f = found[0]
    assert lines[0] == (
        f"::warning file={BAD},line={f.line},col={f.col},endLine={f.end_line},endColumn={f.end_col},title=FSD043::"
        f"{f.message} [checkpoint/torch-load-map-location]"
    )


def test_github_format_escapes_as_the_runner_reads():
    f = Finding(code="FSD003", severity="error", message="50% done\nnext", path="a,b:c.py", line=1, col=2, end_line=1, end_col=3)
    assert (
        github_annotations([f])
        == "::error file=a%2Cb%3Ac.py,line=1,col=2,endLine=1,endColumn=3,title=FSD003::50%25 done%0Anext\n"
    )
    info = Finding(code="FSD033", severity="info", message="m", path="p.py", line=1, col=1, end_line=1, end_col=1)
    assert github_annotations([info]).startswith("::notice ")


def test_sarif_output_is_valid_sarif_2_1_0(capsys):
    validator = _validator()
    assert main(["check", "--output-format", "sarif", str(BAD), str(DATA / "check" / "FSD011_bad.py")]) == 1
    log = json.loads(capsys.readouterr().out)
    errors = sorted(validator.iter_errors(log), key=str)
    assert errors == [], [e.message for e in errors[:3]]
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == {*RULES, "FSD000"}
    results = run["results"]
    assert len(results) == len(check_source(BAD.read_text())) + len(check_source((DATA / "check" / "FSD011_bad.py").read_text()))
    for res in results:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
        region = res["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    first = results[0]
    assert first["ruleId"] == "FSD043" and first["level"] == "warning"
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("FSD043_bad.py")
    fixes = [r.get("properties", {}).get("fix") for r in results if r["ruleId"] == "FSD043"]
    assert fixes[0] is None and fixes[1].startswith("pass map_location=")  # line 16: the value goes on to `return`


def test_sarif_of_a_clean_file_and_of_fsd000_is_valid(tmp_path, capsys):
    validator = _validator()
    assert main(["check", "--output-format", "sarif", str(DATA / "check" / "FSD043_good.py")]) == 0
    clean = json.loads(capsys.readouterr().out)
    assert clean["runs"][0]["results"] == [] and list(validator.iter_errors(clean)) == []
    broken = tmp_path / "my file.py"
    broken.write_text("def (:\n")
    assert main(["check", "--output-format", "sarif", str(broken)]) == 1
    log = json.loads(capsys.readouterr().out)
    assert list(validator.iter_errors(log)) == []
    (res,) = log["runs"][0]["results"]
    assert res["ruleId"] == "FSD000" and res["ruleIndex"] == 0
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("my%20file.py")


def test_sarif_log_rejected_when_it_breaks_the_schema():
    """The validation can fail: a result without its message is not SARIF."""
    validator = _validator()
    log = sarif_log(check_source(BAD.read_text(), str(BAD)))
    del log["runs"][0]["results"][0]["message"]  # type: ignore[index]
    assert list(validator.iter_errors(log)) != []


def test_json_flag_is_the_json_format(capsys):
    assert main(["check", "--json", str(BAD)]) == 1
    a = capsys.readouterr().out
    assert main(["check", "--output-format", "json", str(BAD)]) == 1
    b = capsys.readouterr().out
    assert a == b and json.loads(a)[0]["code"] == "FSD043" and "fix" in json.loads(a)[0]


def test_text_is_the_default_format(capsys):
    assert main(["check", str(BAD)]) == 1
    a = capsys.readouterr().out
    assert main(["check", "--output-format", "text", str(BAD)]) == 1
    assert capsys.readouterr().out == a and a.splitlines()[0].startswith(f"{BAD}:16:17: FSD043 ")


@pytest.mark.parametrize(
    "argv",
    [["--json", "--output-format", "github"], ["--run", "--output-format", "sarif"]],
    ids=["json-and-github", "run-sarif"],
)
def test_conflicting_formats_exit_2(capsys, argv):
    assert main(["check", *argv, str(BAD)]) == 2
    assert capsys.readouterr().err.strip()


def test_unknown_format_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--output-format", "xml", str(BAD)])
    assert exc.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err


def test_pre_commit_hook_is_unchanged_plain_check():
    hook = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "entry: fsdp-skill check\n" in hook
    assert "--output-format" not in hook and "--fix" not in hook and "--diff" not in hook


def test_flake8_plugin_output_is_unchanged():
    """The plugin yields the text format's findings (code, message, section), whatever the new fields say."""
    src = BAD.read_text()
    got = [(line, col, msg) for line, col, msg, _ in Plugin(ast.parse(src), str(BAD)).run()]
    want = [(f.line, f.col - 1, f.line_text().split(": ", 1)[1]) for f in check_source(src, str(BAD))]
    assert got == want and all("fix" not in m.split(" [")[0][-10:] for _, _, m in got)


# --------------------------------------------------------------------------- a file name that is not UTF-8, on a strict stdout
STRICT_STDOUT = {"ascii": {"PYTHONIOENCODING": "ascii:strict"}, "c-locale": {"LC_ALL": "C"}}
SHOWN = "caf\\udce9.py"  # b'caf\xe9.py' as Python's backslashreplace (stderr, ascii()) shows it
BARRIER = "import torch.distributed as dist\n\nrank = dist.get_rank()\nif rank == 0:\n    dist.barrier()\n"


def _odd_names(folder: Path) -> Path:
    """A folder of three files: ``b'caf\\xe9.py'`` (not UTF-8; FSD043, fixable), ``naïve.py`` and ``good.py`` (FSD003)."""
    fd = os.open(os.fsencode(folder) + b"/caf\xe9.py", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, BAD.read_bytes())
    os.close(fd)
    (folder / "naïve.py").write_text(BARRIER, encoding="utf-8")
    (folder / "good.py").write_text(BARRIER, encoding="utf-8")
    return folder


def _check(folder: Path, how: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
    keep = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8") and not k.startswith("LC_")}
    env = {**keep, **STRICT_STDOUT[how], "FSDP_SKILL_HOME": str(folder / ".home")}
    proc = subprocess.run([str(EXE), "check", *argv, "."], cwd=folder, capture_output=True, env=env, timeout=300)
    assert b"Traceback" not in proc.stderr and b"UnicodeEncodeError" not in proc.stderr, proc.stderr.decode(errors="replace")
    return proc


@pytest.mark.parametrize("how", list(STRICT_STDOUT))
def test_a_file_name_that_is_not_utf8_prints_in_every_format(tmp_path, how):
    """``check DIR`` over ``b'caf\\xe9.py'`` with stdout ASCII-only or in the C locale: every format prints, the name
    shown as ``caf\\udce9.py`` (SARIF's URI: its bytes, ``caf%E9.py``), and the other files' findings are kept."""
    folder = _odd_names(tmp_path)
    bad = len(check_source(BAD.read_text(), str(BAD)))
    want = {(SHOWN, "FSD043")} | {(name, "FSD003") for name in ("naïve.py", "good.py")}

    text = _check(folder, how, "--output-format", "text")
    assert text.returncode == 1
    lines = text.stdout.decode("ascii" if how == "ascii" else "utf-8").splitlines()
    assert {ln.split(":")[0] for ln in lines} >= {SHOWN, "good.py"} and len(lines) == bad + 2
    assert all(ln.startswith(f"{SHOWN}:") for ln in lines if "FSD043" in ln)

    found = json.loads(_check(folder, how, "--json").stdout)  # valid JSON on an ASCII stdout too
    assert {(f["path"], f["code"]) for f in found} == want and len(found) == bad + 2

    github = _check(folder, how, "--output-format", "github").stdout.decode("ascii" if how == "ascii" else "utf-8")
    assert github.count(f"file={SHOWN},") == bad and github.count("file=good.py,") == 1

    log = json.loads(_check(folder, how, "--output-format", "sarif").stdout)
    assert list(_validator().iter_errors(log)) == []
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]
    assert sorted(set(uris)) == ["caf%E9.py", "good.py", "na%C3%AFve.py"]


@pytest.mark.parametrize("how", list(STRICT_STDOUT))
def test_a_file_name_that_is_not_utf8_is_diffed_and_fixed(tmp_path, how):
    folder = _odd_names(tmp_path)
    diff = _check(folder, how, "--diff")
    assert diff.returncode == 1
    assert diff.stdout.decode("ascii").startswith(f"--- {SHOWN}\n+++ {SHOWN}\n")
    fixed = _check(folder, how, "--fix")
    assert f"{SHOWN}:".encode() in fixed.stderr and b"FSD043 fixed" in fixed.stderr
    with open(os.fsencode(folder) + b"/caf\xe9.py", "rb") as f:  # written back under its own name
        assert b"map_location=" in f.read()
