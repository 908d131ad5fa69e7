"""The session directory of MCP ``verify_script`` (skill/core/verify/workdirs.py) and ``read_run_file``, through the
in-process MCP client: files listed with their sizes, read back bounded, escapes refused, links never followed,
the size cap; plus each rank's whole output kept within its bound (runtime/report.py)."""

from __future__ import annotations

import asyncio
import base64
import os

import pytest
from mcp import Client

from fsdp_skill.adapters.mcp.server import build_server
from fsdp_skill.core.verify.sent_scripts import check_apart, run_sent_script
from fsdp_skill.core.verify.workdirs import (
    MAX_LISTED_FILES,
    READ_LIMIT_BYTES,
    list_files,
    make_room,
    read_run_file,
    session_limit,
)
from fsdp_skill.errors import InvalidArgument, NotFoundError, StateError
from fsdp_skill.runtime import knobs
from fsdp_skill.runtime.report import RawRank, RawRun, bounded_tail, make_verdict


class WritingVerifier:
    """Runs nothing, but does to the job's working directory what ``writes(cwd)`` does (the script's stand-in);
    every verdict passes (from the conftest's fake verifier)."""

    def __init__(self, fake, writes):
        self.fake, self.writes = fake, writes

    def cached(self, job):
        return None

    def run(self, jobs, *, launcher="warm", use_cache=True, progress=None):
        for job in jobs:
            self.writes(job.cwd)
        return self.fake.run(jobs, launcher=launcher, use_cache=use_cache, progress=progress)


def _call(session, verifier, calls):
    async def go():
        async with Client(build_server(verifier, script_dir=str(session))) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def _write(rel: str, data: bytes):
    def writes(cwd):
        path = os.path.join(cwd, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    return writes


def test_the_run_lists_its_files_and_read_run_file_reads_them(tmp_path, fake_verifier):
    text = "step 1 loss 0.25\n" + "é" * 10
    blob = b"PK\x03\x04\x00\x00" + bytes(range(256))

    def writes(cwd):
        _write("logs/metrics.txt", text.encode())(cwd)
        _write("ckpt.pt", blob)(cwd)

    run, txt, binary, sized = _call(
        tmp_path,
        WritingVerifier(fake_verifier, writes),
        [
            ("verify_script", {"code": "print(1)\n", "workdir": "a"}),
            ("read_run_file", {"workdir": "a", "path": "logs/metrics.txt"}),
            ("read_run_file", {"workdir": "a", "path": "ckpt.pt"}),
            ("read_run_file", {"workdir": "a", "path": "./logs//metrics.txt", "offset": 5}),
        ],
    )
    out = run.structured_content
    assert [(f["path"], f["size"], f["kind"]) for f in out["files"]] == [
        ("ckpt.pt", len(blob), "file"),
        ("logs/metrics.txt", len(text.encode()), "file"),
        ("script.py", len("print(1)\n"), "file"),
    ]
    assert out["files_total"] == 3 and out["files_cut"] is False and out["output_limit_bytes"] == 64 * 1024
    assert out["session_limit_bytes"] == 512 * 1024 * 1024 and out["session_bytes"] >= len(blob) + len(text.encode())
    t = txt.structured_content
    assert t["encoding"] == "utf-8" and t["content"] == text and t["size"] == len(text.encode()) and not t["truncated"]
    assert t["next_offset"] is None
    b = binary.structured_content
    assert b["encoding"] == "base64" and base64.b64decode(b["content"]) == blob
    assert sized.structured_content["content"] == text.encode()[5:].decode()


def test_read_run_file_pages_a_large_file_without_splitting_a_character(tmp_path):
    (tmp_path / "w").mkdir()
    data = ("a" + "中" * (READ_LIMIT_BYTES // 3 + 10)).encode()  # a 3-byte character straddles the bound
    (tmp_path / "w" / "big.txt").write_bytes(data)
    first = read_run_file(str(tmp_path), "w", "big.txt")
    assert first.truncated and first.length <= READ_LIMIT_BYTES and first.length % 3 == 1 and "\ufffd" not in first.content
    rest = read_run_file(str(tmp_path), "w", "big.txt", offset=first.next_offset)
    assert not rest.truncated and rest.next_offset is None
    assert (first.content + rest.content).encode() == data


@pytest.mark.parametrize(
    "path, message",
    [
        ("../other/secret.txt", "no '..'"),
        ("sub/../../other/secret.txt", "no '..'"),
        ("/etc/passwd", "not absolute"),
        ("", "must name a file"),
        (".", "not the working directory itself"),
        ("link.txt", "symbolic link"),
        ("linkdir/secret.txt", "symbolic link"),
        ("sub", "not a regular file"),
        ("missing.txt", "no file 'missing.txt'"),
    ],
    ids=["dotdot", "dotdot inside", "absolute", "empty", "dot", "file link", "dir link", "directory", "missing"],
)
def test_read_run_file_refuses_paths_outside_and_links(tmp_path, fake_verifier, path, message):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    session = tmp_path / "session"
    (session / "other").mkdir(parents=True)
    (session / "other" / "secret.txt").write_text("SECRET")
    (session / "w" / "sub").mkdir(parents=True)
    (session / "w" / "link.txt").symlink_to(outside / "secret.txt")
    (session / "w" / "linkdir").symlink_to(outside)
    (res,) = _call(session, fake_verifier, [("read_run_file", {"workdir": "w", "path": path})])
    assert res.is_error and message in res.content[0].text, res.content[0].text
    assert "SECRET" not in res.content[0].text


def test_read_run_file_refuses_a_workdir_that_is_a_link_or_not_a_plain_name(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    session = tmp_path / "session"
    session.mkdir()
    (session / "w").symlink_to(outside)
    with pytest.raises(InvalidArgument, match="symbolic link"):
        read_run_file(str(session), "w", "secret.txt")
    with pytest.raises(InvalidArgument, match="workdir must be a plain name"):
        read_run_file(str(session), "..", "secret.txt")
    with pytest.raises(NotFoundError, match="no working directory 'nope'"):
        read_run_file(str(session), "nope", "x.txt")


def test_links_a_script_plants_are_listed_not_followed(tmp_path, fake_verifier):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "big.bin").write_bytes(b"x" * 5000)
    victim = outside / "victim.py"
    victim.write_text("keep me")

    def plant(cwd):
        if not os.path.lexists(os.path.join(cwd, "tree")):
            os.symlink(outside, os.path.join(cwd, "tree"))
            os.unlink(os.path.join(cwd, "script.py"))
            os.symlink(victim, os.path.join(cwd, "script.py"))  # the next call must not write through it

    session = tmp_path / "session"
    session.mkdir()
    first, second = _call(
        session,
        WritingVerifier(fake_verifier, plant),
        [("verify_script", {"code": "print(1)\n", "workdir": "w"}), ("verify_script", {"code": "print(2)\n", "workdir": "w"})],
    )
    files = {f["path"]: f for f in first.structured_content["files"]}
    assert files["tree"]["kind"] == "symlink" and not any(p.startswith("tree/") for p in files)
    assert files["tree"]["size"] == len(str(outside))  # the link itself, not the 5000 bytes behind it
    assert first.structured_content["session_bytes"] < 5000
    assert not second.is_error, second.content
    assert victim.read_text() == "keep me" and (session / "w" / "script.py").read_text() == "print(2)\n"
    assert not (session / "w" / "script.py").is_symlink()


def test_a_workdir_replaced_by_a_link_is_refused(tmp_path, fake_verifier):
    outside = tmp_path / "outside"
    outside.mkdir()
    session = tmp_path / "session"
    session.mkdir()
    (session / "w").symlink_to(outside)
    (res,) = _call(session, fake_verifier, [("verify_script", {"code": "print(1)\n", "workdir": "w"})])
    assert res.is_error and "not a directory of this session" in res.content[0].text
    assert list(outside.iterdir()) == []


def test_the_file_list_is_bounded(tmp_path, fake_verifier):
    def many(cwd):
        for i in range(MAX_LISTED_FILES + 5):
            _write(f"f{i:04d}.txt", b"x")(cwd)

    (res,) = _call(tmp_path, WritingVerifier(fake_verifier, many), [("verify_script", {"code": "pass\n"})])
    out = res.structured_content
    assert len(out["files"]) == MAX_LISTED_FILES and out["files_total"] == MAX_LISTED_FILES + 6 and out["files_cut"]
    assert out["files"][0]["path"] == "f0000.txt"  # by path: script.py comes after the f*.txt


def test_make_room_removes_least_recently_used_workdirs_first(tmp_path):
    for i, name in enumerate(["old", "mid", "new", "here"]):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data").write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    (tmp_path / "link").symlink_to(tmp_path / "new")  # a link a script planted: removed as itself
    os.utime(tmp_path / "link", (999, 999), follow_symlinks=False)
    assert make_room(str(tmp_path), "here", limit=1000) == []
    assert make_room(str(tmp_path), "here", limit=250) == ["link", "old", "mid"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here", "new"] and (tmp_path / "new" / "data").exists()
    with pytest.raises(InvalidArgument, match=r"workdir 'here' holds 100 bytes, over the session's cap of 50 bytes"):
        make_room(str(tmp_path), "here", limit=50)


def test_a_run_over_the_cap_removes_other_workdirs_then_refuses_its_own(tmp_path, fake_verifier, monkeypatch):
    monkeypatch.setenv(knobs.SCRIPT_SESSION_BYTES, "3000")
    verifier = WritingVerifier(fake_verifier, _write("blob.bin", b"x" * 2000))
    first, second, again = _call(
        tmp_path,
        verifier,
        [
            ("verify_script", {"code": "pass\n", "workdir": "a"}),
            ("verify_script", {"code": "pass\n", "workdir": "b"}),  # a + b = 4000 > 3000 after it
            ("verify_script", {"code": "pass\n", "workdir": "c"}),
        ],
    )
    assert first.structured_content["removed_workdirs"] == [] and second.structured_content["removed_workdirs"] == []
    assert second.structured_content["session_bytes"] > 3000  # a run can write past the cap ...
    assert again.structured_content["removed_workdirs"] == ["a"]  # ... the next one makes room (the empty HOME stays)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".home", "b", "c"]
    monkeypatch.setenv(knobs.SCRIPT_SESSION_BYTES, "1000")
    (refused,) = _call(tmp_path, verifier, [("verify_script", {"code": "pass\n", "workdir": "c"})])
    assert refused.is_error and "over the session's cap of 1,000 bytes" in refused.content[0].text


@pytest.mark.parametrize("raw", ["0", "-1", "1e9", "lots"])
def test_a_bad_session_cap_is_a_tool_error(raw, tmp_path, fake_verifier, monkeypatch):
    monkeypatch.setenv(knobs.SCRIPT_SESSION_BYTES, raw)
    with pytest.raises(InvalidArgument, match="expected a positive number of bytes"):
        session_limit()
    (res,) = _call(tmp_path, fake_verifier, [("verify_script", {"code": "pass\n"})])
    assert res.is_error and knobs.SCRIPT_SESSION_BYTES in res.content[0].text and fake_verifier.jobs == []


def test_sent_scripts_ask_for_whole_output(tmp_path, fake_verifier):
    rec = WritingVerifier(fake_verifier, lambda cwd: None)
    run_sent_script("pass\n", session_dir=str(tmp_path), verifier=rec)
    (job,) = fake_verifier.jobs
    assert job.keep_output == 64 * 1024


def test_list_files_of_a_missing_workdir_is_empty(tmp_path):
    assert list_files(str(tmp_path), "nope") == ([], 0)


def test_session_and_state_directories_must_not_nest(tmp_path):
    check_apart(str(tmp_path / "session"), str(tmp_path / "state"))
    for session, state in [(tmp_path / "s", tmp_path / "s" / "state"), (tmp_path / "st" / "s", tmp_path / "st")]:
        with pytest.raises(StateError, match="overlap"):
            check_apart(str(session), str(state))


def test_the_server_refuses_to_start_with_its_session_inside_the_state_directory(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("fsdp-skill")), "mcp", "--allow-run-scripts"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env={"FSDP_SKILL_HOME": str(home), "TMPDIR": str(home / "tmp"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "overlap" in proc.stderr and "Traceback" not in proc.stderr
    assert list((home / "tmp").iterdir()) == []  # its session directory went with it


def test_bounded_tail_keeps_the_last_bytes_and_counts_the_rest():
    assert bounded_tail("short", 10) == ("short", 0)
    assert bounded_tail("0123456789abc", 4) == ("9abc", 9)
    kept, dropped = bounded_tail("x" + "é" * 5, 5)  # 11 bytes; the cut falls inside an 'é'
    assert kept == "éé" and dropped == 7


def _verdict(log: str, keep: int):
    raw = RawRun(seconds=0.1, timed_out=False, ranks=[RawRank(rank=0, exit_code=0, log=log)])
    return make_verdict(
        raw,
        script="/w/script.py",
        code="pass\n",
        code_sha256="0" * 64,
        snippet_id=None,
        backend="gloo",
        device="cpu",
        world_size=1,
        timeout=10.0,
        launcher="warm",
        torch_version=None,
        keep_output=keep,
    )


def test_make_verdict_keeps_whole_output_only_when_asked():
    log = "\n".join(f"line {i}" for i in range(1000))
    (whole,) = _verdict(log, 64 * 1024).ranks
    assert whole.output == log and whole.output_dropped_bytes == 0 and len(whole.output_tail.splitlines()) == 40
    (cut,) = _verdict(log, 100).ranks
    assert cut.output == log[-100:] and cut.output_dropped_bytes == len(log) - 100
    (none,) = _verdict(log, 0).ranks
    assert none.output is None and none.output_dropped_bytes == 0


@pytest.mark.parametrize("offset, message", [(-1, "greater than or equal to 0"), (2**63, "less than or equal to")])
def test_read_run_file_offset_is_bounded(tmp_path, fake_verifier, offset, message):
    (tmp_path / "default").mkdir()
    (tmp_path / "default" / "a.txt").write_text("abc")
    (res,) = _call(tmp_path, fake_verifier, [("read_run_file", {"path": "a.txt", "offset": offset})])
    assert res.is_error and message in res.content[0].text, res.content[0].text


def test_a_script_in_its_coding_cookies_encoding_is_read_as_python_reads_it(tmp_path):
    """``verify lat.py`` of a Latin-1 file with ``# -*- coding: latin-1 -*-`` (which ``python lat.py`` runs) is the
    text Python reads, not a UTF-8 decoding error; bytes its encoding cannot hold are a one-line InvalidArgument."""
    from fsdp_skill.core.verify.snippets import script_job
    from fsdp_skill.errors import InvalidArgument

    lat = tmp_path / "lat.py"
    lat.write_bytes(b'# -*- coding: latin-1 -*-\nprint("caf\xe9")\n')
    assert 'print("caf\u00e9")' in script_job(str(lat)).code
    bad = tmp_path / "bad.py"
    bad.write_bytes(b'print("caf\xe9")\n')  # no cookie: UTF-8, where 0xe9 alone is invalid
    with pytest.raises(InvalidArgument, match=r"cannot read .*bad.py: byte 0xe9 at line 1 is not valid utf-8"):
        script_job(str(bad))
