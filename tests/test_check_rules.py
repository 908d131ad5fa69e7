"""``check``: every rule fires exactly where its failing fixture says (``# <- FSDxxx`` marks the line) and
stays silent on its passing fixture; each rule points at a real section and verified snippet; noqa,
select/ignore, the CLI's output and exit codes; the command never imports torch."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fsdp_skill.core.check import RULES, check_paths, check_source
from fsdp_skill.core.knowledge.cards import load_knowledge
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.main import main

DATA = Path(__file__).parent / "data" / "check"
MARK = re.compile(r"#\s*<-\s*(FSD\d{3})")


def _expected(path: Path) -> set[tuple[int, str]]:
    return {(i, m.group(1)) for i, line in enumerate(path.read_text().splitlines(), 1) for m in MARK.finditer(line)}


def test_at_least_25_rules_each_with_both_fixtures():
    assert len(RULES) >= 25
    for code in RULES:
        assert (DATA / f"{code}_bad.py").is_file() and (DATA / f"{code}_good.py").is_file(), code


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_fires_on_bad_fixture(code):
    path = DATA / f"{code}_bad.py"
    expected = {e for e in _expected(path) if e[1] == code}
    assert expected, f"{path} marks no line with '# <- {code}'"
    found = {(f.line, f.code) for f in check_source(path.read_text(), str(path)) if f.code == code}
    assert found == expected


GOOD = sorted(DATA.glob("FSD*_good*.py"))


def test_every_good_fixture_names_a_rule():
    assert {p.name.split("_", 1)[0] for p in GOOD} == set(RULES)


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_rule_silent_on_good_fixture(path):
    """The passing fixtures: ``FSDxxx_good.py``, and ``FSDxxx_good_<case>.py`` for a correct pattern of public code
    that an earlier version of the rule flagged (each file's header says which)."""
    code = path.name.split("_", 1)[0]
    found = [f.line_text() for f in check_source(path.read_text(), str(path)) if f.code == code]
    assert found == []


PUBLIC = sorted((DATA / "public").glob("*.py"))


def test_public_patterns_are_ten_or_more():
    assert sum(1 for p in PUBLIC if _expected(p)) >= 10


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.stem)
def test_public_bug_pattern_caught_by_its_rule(path):
    """Small scripts written from public bug reports (source in each header): each finding exactly where marked,
    nothing else (11_fsdp2_clip_is_fine.py is a report where the plain API is right, and must stay silent)."""
    found = {(f.line, f.code) for f in check_source(path.read_text(), str(path))}
    assert found == _expected(path)


def test_every_rule_points_at_existing_section_and_snippet():
    kb = load_knowledge()
    for rule in RULES.values():
        assert kb.section(rule.section).id == rule.section, rule.code
        assert rule.snippet in kb.snippets, (rule.code, rule.snippet)


def test_readme_rule_table_matches_the_rules():
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].strip("| "): line for line in readme.splitlines() if re.match(r"^\| FSD\d{3} \|", line)}
    assert set(rows) == set(RULES)
    for r in RULES.values():
        assert rows[r.code] == f"| {r.code} | {r.severity} | {r.summary} | `{r.section}` | `{r.snippet}` |"


def test_finding_carries_section_snippet_and_range():
    (f,) = check_source("import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n", "t.py")
    assert (f.code, f.severity, f.line, f.col, f.end_line, f.end_col) == ("FSD003", "error", 3, 5, 3, 19)
    assert f.section == "debugging/distributed-debug-detail" and f.snippet == "debugging/distributed-debug-detail"
    assert f.line_text().startswith("t.py:3:5: FSD003 dist.barrier() runs only on some ranks (rank condition at line 2)")
    assert f.line_text().endswith("[debugging/distributed-debug-detail]")


BARRIER = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier(){}\n"


@pytest.mark.parametrize(
    "comment, silenced",
    [("  # noqa", True), ("  # noqa: FSD003", True), ("  # NOQA:FSD011,FSD003", True), ("  # noqa: FSD011", False), ("", False)],
)
def test_noqa(comment, silenced):
    assert (check_source(BARRIER.format(comment)) == []) is silenced


def test_select_and_ignore_by_prefix():
    code = (DATA / "FSD003_bad.py").read_text() + "\nimport torch\nscaler = torch.amp.GradScaler()\nfully_shard(None)\n"
    codes = {f.code for f in check_source(code)}
    assert {"FSD003", "FSD011"} <= codes
    assert {f.code for f in check_source(code, select=["FSD01"])} == {"FSD011"}
    assert "FSD003" not in {f.code for f in check_source(code, ignore=["fsd003"])}
    with pytest.raises(InvalidArgument, match="unknown rule code 'E501'"):
        check_source(code, select=["E501"])


def test_syntax_error_is_a_finding():
    (f,) = check_source("def broken(:\n", "b.py")
    assert (f.code, f.severity, f.line, f.section) == ("FSD000", "error", 1, None)


def test_check_paths_walks_directories_and_rejects_bad_paths(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(BARRIER.format(""))
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "x.py").write_text(BARRIER.format(""))
    (tmp_path / "notes.txt").write_text("hi")
    assert [(Path(f.path).name, f.code) for f in check_paths([str(tmp_path)])] == [("train.py", "FSD003")]
    with pytest.raises(InvalidArgument, match="no such file"):
        check_paths([str(tmp_path / "missing.py")])
    with pytest.raises(InvalidArgument, match="not a Python file"):
        check_paths([str(tmp_path / "notes.txt")])
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8 and no coding cookie: its own finding, not bad input
    (f,) = check_paths([str(tmp_path / "latin.py")])
    assert (f.code, f.line) == ("FSD000", 1) and "not valid utf-8" in f.message


def test_knowledge_snippets_only_flag_their_deliberate_mistakes():
    """Verified snippets are correct code, except where they demonstrate the mistake on purpose (each listed)."""
    deliberate = {
        ("data/distributed-sampler-shards", "FSD062"),  # the ValueError it asserts
        ("data/reduce-a-metric", "FSD064"),  # the TypeError it asserts
        ("debugging/monitored-barrier", "FSD003"),
        ("debugging/gloo-connection-closed-by-peer", "FSD003"),
        ("debugging/ddp-no-sync-accumulation", "FSD040"),
        ("debugging/ddp-no-sync-accumulation", "FSD046"),
        ("fsdp2/optimizer-order", "FSD001"),
        ("mixed-precision/fsdp1-fp16-sharded-grad-scaler", "FSD011"),
        ("mixed-precision/fsdp2-autocast", "FSD020"),
        ("model/model-dtype-vs-policy", "FSD020"),
        ("model/ac-reentrant-vs-nonreentrant", "FSD027"),
        ("parallelism/tp-fsdp2-2d", "FSD029"),
        ("sharding/bottom-up-order", "FSD015"),
        ("sharding/rank-seeded-init-replicas", "FSD084"),  # the per-rank seed its first half shows
    }
    kb = load_knowledge()
    found = {
        (sp.id, f.code) for sp in kb.snippets.values() for f in check_source(sp.code, sp.id) if RULES[f.code].severity != "info"
    }
    assert found == deliberate


# --- the CLI ---------------------------------------------------------------------------------------------


def test_cli_clean_file_exits_0(capsys):
    assert main(["check", str(DATA / "FSD014_good.py")]) == 0
    assert capsys.readouterr().out == ""


def test_cli_findings_exit_1_with_linter_lines(capsys):
    path = str(DATA / "FSD014_bad.py")
    assert main(["check", path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"{path}:9:5: FSD014 no destroy_process_group(): call it once at the end (in a finally:), "
        "or NCCL teardown can hang at exit [init/destroy-process-group]"
    )


def test_cli_json_select_ignore(capsys):
    path = str(DATA / "FSD003_bad.py")
    assert main(["check", "--json", path]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert {r["code"] for r in rows} == {"FSD003"} and set(rows[0]) >= {
        "code",
        "severity",
        "message",
        "path",
        "line",
        "col",
        "end_line",
        "end_col",
        "section",
        "snippet",
    }
    assert main(["check", "--json", "--ignore", "FSD003", path]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["check", "--select", "FSD011,FSD012", path]) == 0


@pytest.mark.parametrize("args, message", [(["missing.py"], "no such file"), (["--select", "X1", "-"], "unknown rule code")])
def test_cli_bad_input_exits_2(args, message, capsys):
    assert main(["check", *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_syntax_error_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    assert main(["check", str(bad)]) == 1
    assert "FSD000 file does not parse with Python 3." in capsys.readouterr().out


def test_cli_reads_stdin_and_never_imports_torch():
    code = (
        "import runpy, sys\nsys.argv = ['fsdp-skill', 'check', '-']\n"
        "from fsdp_skill.main import main\nrc = main(sys.argv[1:])\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)\nsys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], input=BARRIER.format(""), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("-:3:5: FSD003 ")
    assert "NO-TORCH" in proc.stderr


def test_cli_rules_lists_the_table(capsys):
    assert main(["check", "--rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(RULES) and lines[0].startswith("FSD001\terror\t")


def test_cli_check_needs_no_state_directory(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    home.write_text("not a directory")  # an unusable $FSDP_SKILL_HOME: ask/show exit 1, check does not care
    monkeypatch.setenv("FSDP_SKILL_HOME", str(home))
    assert main(["check", str(DATA / "FSD014_good.py")]) == 0


def test_unhashable_comparisons_do_not_crash_the_checker():
    """huggingface/trl compares a set with a list of sets; the rank-condition code once called set() on it."""
    code = "import torch.distributed as dist\nx = 1\nif x != [{1}]:\n    dist.barrier()\nif x not in [{'a'}, {'b'}]:\n    pass\n"
    assert check_source(code, "t.py") == []


def test_a_bare_requires_grad_call_does_not_crash_the_frozen_params_rule():
    """FSD031 looks for ``module.requires_grad_(False)``; a function of that name called bare once made the checker
    fail on the file (FSD000, AttributeError)."""
    code = (
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "def requires_grad_(flag):\n    pass\n"
        "def main(model):\n    requires_grad_(False)\n    model = FSDP(model)\n"
    )
    assert check_source(code, "t.py") == []


def test_a_checker_failure_on_one_file_is_reported_for_that_file_and_the_others_are_checked(tmp_path, monkeypatch):
    import fsdp_skill.core.check as check

    def broken(m):
        if any(isinstance(n, ast.Name) and n.id == "trigger" for n in m.nodes):
            raise TypeError("unhashable type: 'set'")
        return iter(())

    monkeypatch.setitem(check.FINDERS, "FSD026", broken)
    (tmp_path / "a.py").write_text("trigger = 1\n")
    (tmp_path / "b.py").write_text((DATA / "FSD003_bad.py").read_text())
    found = check_paths([str(tmp_path)])
    bad = [f for f in found if f.path.endswith("a.py")]
    assert [(f.code, f.line) for f in bad] == [("FSD000", 1)] and "TypeError: unhashable type" in bad[0].message
    assert any(f.code == "FSD003" and f.path.endswith("b.py") for f in found)


@pytest.mark.slow
def test_the_installed_torch_library_is_checked_without_a_failure_or_a_finding():
    """Every file of torch (about 2,300, its own tests included) is analysed; torch's library code, which is right,
    gets no finding (torch/testing holds deliberate mistakes and 3.12-only files, so only failures count there)."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    found = check_paths([str(root)])
    assert not [f for f in found if "checker failed" in f.message]
    assert [f.line_text() for f in found if "/testing/" not in f.path] == []


def _lines(src: str, code: str) -> list[int]:
    return [f.line for f in check_source(src, "t.py") if f.code == code]


def test_fsd012_silent_on_the_not_fsdp_arm_but_not_on_an_unrelated_else():
    good = (DATA / "FSD012_good_flag_branches.py").read_text()
    assert _lines(good, "FSD012") == []
    # the other arm does something else than clip through the root: nothing tells this arm is not FSDP
    unrelated = good.replace("            model.clip_grad_norm_(1.0)\n", "            print('no clip')\n")
    assert _lines(unrelated, "FSD012") == [24]


def test_fsd001_an_optimizer_closed_over_by_the_sharding_helper_caller_is_given_to_it():
    good = (DATA / "FSD001_good_closure_helper.py").read_text()
    assert _lines(good, "FSD001") == []
    assert _lines(good.replace("parallelize_model(m1, config, opt)", "parallelize_model(m1, config)"), "FSD001") == [18]


def test_fsd004_fsd006_under_an_or_whose_rank_free_part_holds_inside_but_not_another_inner_condition():
    good = (DATA / "FSD006_good_every_rank_disjunct.py").read_text()
    assert [f.code for f in check_source(good, "t.py") if f.code in ("FSD004", "FSD006")] == []
    full = good.replace('if state_dict_type == "sharded" and new_version:', 'if state_dict_type == "full":')
    assert [(f.line, f.code) for f in check_source(full, "t.py") if f.code in ("FSD004", "FSD006")] == [
        (12, "FSD004"),
        (13, "FSD006"),
    ]


def test_fsd003_the_flag_that_lets_every_rank_in_also_guards_the_collective_of_the_function_called():
    good = (DATA / "FSD003_good_same_flag_guard.py").read_text()
    assert _lines(good, "FSD003") == []
    # the flag not passed: the callee's default (False) keeps its barrier from running at all
    call = "load_checkpoint_to_cpu(filename, load_on_all_ranks=load_on_all_ranks)"
    assert _lines(good.replace(call, "load_checkpoint_to_cpu(filename)"), "FSD003") == []
    # the flag forced on: the barrier runs whenever the helper does, on rank 0 alone when the caller's flag is off
    assert _lines(good.replace(call, "load_checkpoint_to_cpu(filename, load_on_all_ranks=True)"), "FSD003") == [23]
    # a flag other than the caller's
    assert _lines(good.replace(call, "load_checkpoint_to_cpu(filename, load_on_all_ranks=self.sync)"), "FSD003") == [23]
    # a second, unconditional collective in the callee
    assert _lines(good.replace("    return state\n", "    dist.barrier()\n    return state\n", 1), "FSD003") == [24]
    # the helper's broadcast under another flag than the one the early return tests
    assert _lines(good.replace("        if use_fsdp_eval:\n", "        if args.sync:\n"), "FSD003") == [47]


def test_fsd003_the_guard_of_a_collective_in_another_checked_file_travels_with_its_summary(tmp_path):
    """fairseq: trainer.py calls checkpoint_utils.load_checkpoint_to_cpu, whose barrier runs only under the flag
    that lets every rank into the caller's branch."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "train.py").write_text("from pkg.trainer import load\n")  # the project's root is tmp_path
    (tmp_path / "pkg" / "checkpoint_utils.py").write_text(
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def load_checkpoint_to_cpu(path, arg_overrides=None, load_on_all_ranks=False):\n"
        "    state = torch.load(path, map_location='cpu')\n"
        "    if load_on_all_ranks:\n"
        "        dist.barrier()\n"
        "    return state\n"
    )
    trainer = (
        "import torch.distributed as dist\nfrom pkg import checkpoint_utils\n\n\n"
        "def load(cfg, filename):\n"
        "    load_on_all_ranks = cfg.on_all_ranks or cfg.fsdp\n"
        "    if load_on_all_ranks or dist.get_rank() == 0:\n"
        "        return checkpoint_utils.load_checkpoint_to_cpu(filename, load_on_all_ranks=ARG)\n"
    )
    (tmp_path / "pkg" / "trainer.py").write_text(trainer.replace("ARG", "load_on_all_ranks"))
    assert [f for f in check_paths([str(tmp_path)]) if f.code == "FSD003"] == []
    (tmp_path / "pkg" / "trainer.py").write_text(trainer.replace("ARG", "cfg.other"))
    assert [(Path(f.path).name, f.line) for f in check_paths([str(tmp_path)]) if f.code == "FSD003"] == [("trainer.py", 8)]


def test_fsd026_the_flag_declared_for_old_torch_only():
    """Swin-Transformer: ``--local_rank`` under ``if PYTORCH_MAJOR_VERSION == 1:`` is silent; declared for every torch, FSD026."""
    good = (DATA / "FSD026_good_version_branch.py").read_text()
    assert _lines(good, "FSD026") == []
    unguarded = good.replace(
        "    if PYTORCH_MAJOR_VERSION == 1:\n        parser.add_argument", "    if True:\n        parser.add_argument"
    )
    assert _lines(unguarded, "FSD026") == [19]


def test_fsd043_what_the_same_script_saved_from_the_cpu_and_the_saved_arguments():
    """dino's dumped features and LLaMA2-Accessory's model_args.pth are silent; the same loads fire once the dump keeps
    the GPU tensor, or the file and the name no longer say arguments."""
    good = (DATA / "FSD043_good_saved_from_cpu.py").read_text()
    assert _lines(good, "FSD043") == []
    gpu = good.replace("torch.save(train_features.cpu(),", "torch.save(train_features,")
    assert _lines(gpu, "FSD043") == [25]
    weights = good.replace(
        'train_args = torch.load(os.path.join(args.ckpt, "model_args.pth"))',
        'ckpt = torch.load(os.path.join(args.ckpt, "model.pth"))',
    )
    assert _lines(weights.replace("print(train_args.__dict__,", "print(ckpt,"), "FSD043") == [34]
    ints = good.replace('{"epoch": int(args.epoch), "step": 0}', '{"epoch": int(args.epoch), "ema": model.state_dict()}')
    assert _lines(ints, "FSD043") == [33]


HANDED = """import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

def build_state(model, use_grad_scaler):
    model = FSDP(model)
    kwargs = {{}}
    if use_grad_scaler:
        {line}
    return State(model=model, **kwargs)
{use}"""


@pytest.mark.parametrize(
    ("line", "use", "want"),
    [
        ('kwargs["scaler"] = torch.amp.GradScaler()', "", []),  # composer's test helper: handed to a State, never used
        ("return State(model=model, scaler=torch.amp.GradScaler())", "", []),
        ('kwargs["scaler"] = torch.amp.GradScaler()', "\ndef step(s, loss):\n    s.scale(loss).backward()\n", [8]),
        ("scaler = torch.amp.GradScaler()", "", [8]),  # bound to a name in the file: as before
    ],
)
def test_fsd011_a_scaler_handed_to_unseen_code_and_never_used_here_is_silent(line, use, want):
    found = [f.line for f in check_source(HANDED.format(line=line, use=use), select=["FSD011"])]
    assert found == want


def test_fsd043_lightning_load_from_checkpoint_needs_a_per_gpu_strategy():
    """``Model.load_from_checkpoint(path)`` counts where a GPU Trainer re-runs the script on every rank (DDP, FSDP,
    DeepSpeed); a spawn strategy (the parent loads once), a CPU Trainer or a mapped load is silent."""
    bad = (DATA / "checkpoint" / "lightning_load_bad.py").read_text()
    assert _lines(bad, "FSD043") == [24]
    assert _lines(bad.replace('strategy="ddp"', 'strategy="fsdp"'), "FSD043") == [24]
    assert _lines(bad.replace('strategy="ddp"', 'strategy="ddp_spawn"'), "FSD043") == []
    assert _lines(bad.replace('accelerator="gpu"', 'accelerator="cpu"'), "FSD043") == []
    assert _lines(bad.replace("(args.resume)", "(args.resume, torch.device('cpu'))"), "FSD043") == []
    # a guard that keeps the load to one process
    one = bad.replace("    if args.resume:\n", "    if args.resume and trainer_rank() == 0:\n")
    assert _lines(one.replace("trainer_rank()", "int(os.environ['RANK'])"), "FSD043") == []


def test_rank_parity_is_a_side_of_its_own():
    """``rank % 2 == 0`` selects the even ranks, not rank 0: it pairs with ``rank % 2 == 1`` (or ``!= 0``), never
    with ``rank != 0``; a half of the ranks alone at a barrier is still reported, in a context manager too."""
    head = "import torch.distributed as dist\n\n\ndef f(rank):\n"
    paired = head + "    if rank % 2 == 0:\n        dist.barrier()\n    if rank % 2 != 0:\n        dist.barrier()\n"
    assert [f.code for f in check_source(paired, "t.py") if f.code == "FSD003"] == []
    misread = head + "    if rank % 2 == 0:\n        dist.barrier()\n    if rank != 0:\n        dist.barrier()\n"
    assert [f.line for f in check_source(misread, "t.py") if f.code == "FSD003"] == [6, 8]
    lone = (
        "import torch.distributed as dist\n\n\nclass C:\n    def __enter__(self):\n        if self.rank % 2 == 0:\n"
        "            dist.barrier()\n\n    def __exit__(self, *a):\n        dist.barrier()\n"
    )
    assert [f.line for f in check_source(lone, "t.py") if f.code == "FSD003"] == [7]


def test_cli_refuses_an_endless_stdin_and_walks_a_deep_tree(tmp_path, monkeypatch, capsys):
    """``check -`` reads at most files.MAX_STDIN_BYTES of standard input (an endless stream is refused, not read until
    memory runs out); a directory 1,100 folders deep is walked (pathlib's rglob raised RecursionError there)."""
    import io

    from fsdp_skill.core.check import files

    monkeypatch.setattr(files, "MAX_STDIN_BYTES", 64)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x = 1\n" * 100)))
    assert main(["check", "-"]) == 2
    assert "standard input holds more than" in capsys.readouterr().err
    deep = tmp_path / "deep"
    deep.mkdir()
    monkeypatch.chdir(deep)
    try:
        for _ in range(1100):
            os.mkdir("d")
            os.chdir("d")
        Path("t.py").write_text(BARRIER.format(""))
        (Path("..") / ".hidden").mkdir()
        (Path("..") / ".hidden" / "u.py").write_text(BARRIER.format(""))  # hidden folders are skipped, as before
        os.chdir(tmp_path)
        assert main(["check", "--select", "FSD003", "deep"]) == 1
        out = capsys.readouterr().out
        assert out.count("FSD003") == 1 and "/d/t.py:3:5: FSD003" in out
    finally:
        _remove_deep(deep)


def _remove_deep(root: Path) -> None:
    """Remove a tree of nested ``d`` folders bottom-up without recursion (shutil.rmtree, and pytest's clean-up of old
    temporary folders, recurse once a level and fail on 1,100 of them)."""
    os.chdir(root)
    depth = 0
    while os.path.isdir("d"):
        os.chdir("d")
        depth += 1
    for _ in range(depth + 1):
        for name in os.listdir("."):
            if os.path.isdir(name) and not os.path.islink(name):
                for inner in os.listdir(name):
                    os.remove(os.path.join(name, inner))
                os.rmdir(name)
            else:
                os.remove(name)
        os.chdir("..")
    os.rmdir(root)
