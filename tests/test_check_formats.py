"""``check --output-format text|json|github|sarif``: GitHub workflow commands (escaped as the runner reads them),
a SARIF 2.1.0 log valid against the official schema (``tests/data/sarif/``, see its SOURCE.md), ``--json`` as
``json``; the pre-commit hook and the flake8 plugin unchanged by these options."""

from __future__ import annotations

import ast
import json
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
