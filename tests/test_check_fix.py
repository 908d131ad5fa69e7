"""``check --fix`` / ``--diff``: each fixable rule's fix on a runnable fixture script (``tests/data/check/fix/FSDxxx.py``)
leaves a file the rule no longer flags, and the fixed script passes under ``verify`` (gloo, world size 2); ``--diff``
prints a unified diff and writes nothing; a file with nothing to fix is byte-identical afterwards; comments,
formatting, line endings and a byte order mark are kept; ambiguous edits are skipped and reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsdp_skill.core.check import check_source
from fsdp_skill.core.check.fix import FIXABLE, fix_source
from fsdp_skill.main import main

DATA = Path(__file__).parent / "data" / "check"
FIXTURES = sorted((DATA / "fix").glob("FSD*.py"))


def _copy(tmp_path: Path, src: Path) -> Path:
    dst = tmp_path / src.name
    dst.write_bytes(src.read_bytes())
    return dst


def test_every_fixable_rule_has_a_runnable_fixture():
    assert {p.stem for p in FIXTURES} == set(FIXABLE)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_finding_carries_its_fix(path):
    found = [f for f in check_source(path.read_text(), str(path)) if f.code == path.stem]
    assert len(found) == 1 and found[0].fix, found


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fix_removes_the_finding_and_says_so(tmp_path, capsys, path):
    target = _copy(tmp_path, path)
    before = target.read_text()
    main(["check", "--fix", str(target)])
    err = capsys.readouterr().err
    after = target.read_text()
    assert after != before
    assert f"{path.stem} fixed: " in err
    assert [f.code for f in check_source(after, str(target)) if f.code == path.stem] == []
    # a second --fix has nothing left to do for this rule: the file stays as it is
    main(["check", "--fix", "--select", path.stem, str(target)])
    capsys.readouterr()
    assert target.read_text() == after


@pytest.mark.slow
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixed_script_runs_under_verify(tmp_path, capsys, path):
    target = _copy(tmp_path, path)
    main(["check", "--fix", "--select", path.stem, str(target)])
    capsys.readouterr()
    code = main(["verify", "--json", "--no-cache", "--timeout", "120", str(target)])
    out = json.loads(capsys.readouterr().out)[0]
    assert code == 0 and out["status"] == "passed", out


@pytest.mark.slow
@pytest.mark.parametrize("code", ["FSD012", "FSD014", "FSD035"])
def test_unfixed_script_fails_its_own_check(tmp_path, capsys, code):
    """The fixtures whose mistake shows on CPU fail before the fix: their checks can fail."""
    target = _copy(tmp_path, DATA / "fix" / f"{code}.py")
    rc = main(["verify", "--json", "--no-cache", "--timeout", "120", str(target)])
    out = json.loads(capsys.readouterr().out)[0]
    assert rc == 1 and out["status"] == "failed", out


MULTI = """\
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, DistributedSampler


def main():
    dist.init_process_group("nccl")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank % 8)
    model = FSDP(torch.nn.Linear(4, 4).cuda())
    ckpt = torch.load("ckpt.pt")  # resume
    model.load_state_dict(ckpt["model"])
    scaler = torch.cuda.amp.GradScaler()
    ds = list(range(10))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        # one epoch
        for x in loader:
            y = checkpoint(
                model,
                x,
            )
            scaler.scale(y.sum()).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(),  1.0)  # odd spacing kept
            scaler.step(opt)


if __name__ == "__main__":
    main()
"""

MULTI_FIXED = """\
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, DistributedSampler
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler


def main():
    dist.init_process_group("nccl")
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank % 8)
    model = FSDP(torch.nn.Linear(4, 4).cuda())
    ckpt = torch.load("ckpt.pt", map_location="cpu")  # resume
    model.load_state_dict(ckpt["model"])
    scaler = ShardedGradScaler()
    ds = list(range(10))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        # one epoch
        for x in loader:
            y = checkpoint(
                model,
                x,
                use_reentrant=False,
            )
            scaler.scale(y.sum()).backward()
            model.clip_grad_norm_(1.0)  # odd spacing kept
            scaler.step(opt)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_all_six_fixes_in_one_file_keep_comments_and_layout(tmp_path, capsys):
    target = tmp_path / "train.py"
    target.write_text(MULTI)
    assert main(["check", "--fix", str(target)]) == 0
    err = capsys.readouterr().err
    assert target.read_text() == MULTI_FIXED
    assert err.count(" fixed: ") == 6 and "Fixed 6 finding(s); 0 remaining." in err


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path, capsys):
    target = tmp_path / "ckpt.py"
    src = MULTI.replace("    scaler = torch.cuda.amp.GradScaler()\n", "")
    target.write_text(src)
    assert main(["check", "--diff", "--select", "FSD043", str(target)]) == 1
    out, err = capsys.readouterr()
    assert target.read_text() == src
    assert out == (
        f"--- {target}\n+++ {target}\n@@ -12,7 +12,7 @@\n"
        '     rank = int(os.environ["RANK"])\n'
        "     torch.cuda.set_device(rank % 8)\n"
        "     model = FSDP(torch.nn.Linear(4, 4).cuda())\n"
        '-    ckpt = torch.load("ckpt.pt")  # resume\n'
        '+    ckpt = torch.load("ckpt.pt", map_location="cpu")  # resume\n'
        '     model.load_state_dict(ckpt["model"])\n'
        "     ds = list(range(10))\n"
        "     sampler = DistributedSampler(ds)\n"
    )
    assert "Would fix 1 finding(s) in 1 file(s)." in err


def test_diff_with_nothing_to_fix_exits_0_and_prints_nothing(capsys):
    assert main(["check", "--diff", str(DATA / "FSD043_good.py")]) == 0
    assert capsys.readouterr().out == ""


def test_diff_reads_standard_input(monkeypatch, capsys):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((DATA / "fix" / "FSD027.py").read_bytes())))
    assert main(["check", "--diff", "-"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("--- -\n+++ -\n@@ ") and "+        h = checkpoint(self.a, x, use_reentrant=False)" in out


@pytest.mark.parametrize("name", ["FSD043_good.py", "FSD014_good.py", "FSD035_good.py", "FSD012_good.py"])
def test_file_with_nothing_to_fix_is_byte_identical(tmp_path, capsys, name):
    target = _copy(tmp_path, DATA / name)
    before = target.read_bytes()
    main(["check", "--fix", str(target)])
    capsys.readouterr()
    assert target.read_bytes() == before


NOT_FIXABLE = """\
import torch
import torch.distributed as dist


def main(args):
    dist.init_process_group("nccl")
    if args.dry_run:
        return
    torch.cuda.set_device(0)
    x = torch.load("emb.pt")
    y = x @ x.T  # used directly: map_location="cpu" would move it
    print(y)


if __name__ == "__main__":
    main(None)
"""


def test_ambiguous_edits_are_skipped_and_reported(tmp_path, capsys):
    target = tmp_path / "t.py"
    target.write_bytes(NOT_FIXABLE.encode())
    assert main(["check", "--fix", "--select", "FSD014,FSD043", str(target)]) == 1
    err = capsys.readouterr().err
    assert target.read_bytes() == NOT_FIXABLE.encode()
    assert "FSD014 not fixable: the main flow can return or exit early" in err
    assert "FSD043 not fixable: the loaded tensors are used directly" in err
    assert "Fixed 0 finding(s); 2 remaining." in err


def test_crlf_and_byte_order_mark_are_kept(tmp_path, capsys):
    src = (DATA / "fix" / "FSD027.py").read_text().replace("\n", "\r\n")
    target = tmp_path / "w.py"
    target.write_bytes(b"\xef\xbb\xbf" + src.encode())
    assert main(["check", "--fix", "--select", "FSD027", str(target)]) == 0
    capsys.readouterr()
    data = target.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\n" not in data.replace(b"\r\n", b"")
    assert b"checkpoint(self.a, x, use_reentrant=False)" in data


def test_a_file_in_its_coding_cookies_encoding_is_fixed_in_that_encoding(tmp_path, capsys):
    """A latin-1 file (PEP 263 cookie) is read as Python reads it and written back in latin-1, its other bytes kept."""
    src = "# -*- coding: latin-1 -*-\n# caf\u00e9 \u00b5s\n" + (DATA / "fix" / "FSD027.py").read_text()
    target = tmp_path / "w.py"
    target.write_bytes(src.encode("latin-1"))
    assert main(["check", "--fix", "--select", "FSD027", str(target)]) == 0
    capsys.readouterr()
    data = target.read_bytes()
    assert b"# caf\xe9 \xb5s\n" in data and b"checkpoint(self.a, x, use_reentrant=False)" in data
    assert data.decode("latin-1") == src.replace("checkpoint(self.a, x)", "checkpoint(self.a, x, use_reentrant=False)")


def test_an_undecodable_file_is_left_as_it_is_and_the_others_are_fixed(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"x = '\xff'\n")
    good = tmp_path / "good.py"
    good.write_text((DATA / "fix" / "FSD027.py").read_text())
    main(["check", "--fix", "--select", "FSD027,FSD000", str(tmp_path)])
    out = capsys.readouterr().out
    assert bad.read_bytes() == b"x = '\xff'\n" and "FSD000" in out
    assert "use_reentrant=False" in good.read_text()


def test_fix_source_returns_the_same_text_when_nothing_is_fixable():
    src = (DATA / "FSD043_good.py").read_text()
    result = fix_source(src, check_source(src))
    assert result.source is src and not result.changed


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--fix", "--diff", "x.py"],
        ["check", "--fix", "-"],
        ["check", "--diff", "--json", "x.py"],
        ["check", "--fix", "--run", "x.py"],
    ],
    ids=["fix-and-diff", "fix-stdin", "diff-json", "fix-run"],
)
def test_bad_fix_options_exit_2(capsys, argv):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip()


def test_plain_check_does_not_import_libcst():
    code = (
        "import sys\nfrom fsdp_skill.main import main\n"
        f"main(['check', '--json', {str(DATA / 'fix' / 'FSD043.py')!r}])\n"
        "assert 'libcst' not in sys.modules, 'libcst imported by a plain check'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"fix": "pass map_location=' in proc.stdout
