"""Several hosts through torchrun: node flags passed through to torch elastic, their validation (exit 2),
global ranks in the report, and multi-node verdicts kept out of the cache."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fsdp_skill.main import main
from fsdp_skill.runtime.cache import state_path
from fsdp_skill.runtime.models import RankResult, Verdict
from fsdp_skill.runtime.torchrun import Nodes, _console, _global_ranks

ALLSUM = """\
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
try:
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 4, f"world_size {world} != 4"
    t = torch.tensor([float(rank)])
    dist.all_reduce(t)
    assert t.item() == 6.0, f"sum {t.item()} != 6"
    print(f"rank {rank} of {world} (local {os.environ['LOCAL_RANK']}): sum {t.item()}")
finally:
    dist.destroy_process_group()
"""


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "allsum.py"
    path.write_text(ALLSUM, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--nnodes", "2", "--rdzv-endpoint", "127.0.0.1:29400"], "need --launcher torchrun"),
        (["--launcher", "torchrun", "--node-rank", "1"], "--node-rank need --nnodes N"),
        (["--launcher", "torchrun", "--nnodes", "0"], "--nnodes must be at least 1, not 0"),
        (
            ["--launcher", "torchrun", "--nnodes", "2", "--node-rank", "2", "--rdzv-endpoint", "h:1"],
            "--node-rank(2) must be in 0..nnodes-1 (1)",
        ),
        (["--launcher", "torchrun", "--nnodes", "2", "--node-rank", "0"], "--nnodes 2 needs --rdzv-endpoint"),
        (["--launcher", "torchrun", "--nnodes", "2", "--rdzv-endpoint", "h:1"], "static rendezvous needs --node-rank"),
        (
            ["--launcher", "torchrun", "--nnodes", "2", "--rdzv-backend", "zmq", "--rdzv-endpoint", "h:1"],
            "--rdzv-backend must be one of c10d, static",
        ),
        (
            ["--launcher", "torchrun", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:99999"],
            "--rdzv-endpoint must be HOST[:PORT]",
        ),
        (
            ["--launcher", "torchrun", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--master-addr", "h"],
            "go with the static rendezvous",
        ),
        (
            ["--launcher", "torchrun", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint", "h:1", "--rdzv-id", "a b"],
            "--rdzv-id must be",
        ),
    ],
    ids=[
        "warm-launcher",
        "node-rank-alone",
        "nnodes-0",
        "node-rank-too-big",
        "no-endpoint",
        "static-no-node-rank",
        "bad-backend",
        "bad-port",
        "master-with-c10d",
        "bad-id",
    ],
)
def test_bad_node_flags_exit_2_with_one_line(capsys, script, flags, message):
    code = main(["verify", str(script), *flags])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_several_nodes_take_one_target(capsys, script):
    code = main(
        [
            "verify",
            str(script),
            str(script),
            "--launcher",
            "torchrun",
            "--nnodes",
            "2",
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            "127.0.0.1:1",
        ]
    )
    assert code == 2 and "verify one target at a time" in capsys.readouterr().err


def test_node_args_replace_standalone():
    nodes = Nodes(nnodes=2, node_rank=1, rdzv_backend="c10d", rdzv_endpoint="10.0.0.1:29400", rdzv_id="job7")
    nodes.validate()
    assert nodes.args(4) == [
        "--nnodes=2",
        "--nproc_per_node=4",
        "--node-rank=1",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=10.0.0.1:29400",
        "--rdzv-id=job7",
    ]


@pytest.mark.parametrize(
    "known, node_rank, expected",
    [
        ({0: 2}, 0, [2, 3]),  # c10d put this node second, whatever --node-rank said
        ({1: 3, 0: 2}, None, [2, 3]),
        ({}, 1, [2, 3]),  # nothing observed: static numbering
        ({}, None, [0, 1]),
    ],
    ids=["one-observed", "all-observed", "static-fallback", "nothing"],
)
def test_global_ranks_of_this_node(known, node_rank, expected):
    assert _global_ranks(2, known, Nodes(nnodes=2, node_rank=node_rank)) == expected


def test_report_names_the_nodes(capsys, fake_verifier, script):
    from fsdp_skill.adapters.cli.verify import format_verdict

    v = Verdict(
        status="failed",
        reason="rank 2 raised ValueError [this node ran ranks 2-3 of 4; ...]",
        world_size=4,
        nnodes=2,
        backend="gloo",
        launcher="torchrun",
        seconds=1.0,
        ranks=[RankResult(rank=2, exit_code=1), RankResult(rank=3, exit_code=0)],
    )
    text = format_verdict(v, "allsum.py")
    assert text.startswith("FAIL  allsum.py  (1.00 s, torchrun, gloo x4 on 2 nodes)")
    assert "  rank 2: exit code 1" in text and "this node ran ranks 2-3 of 4" in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_nodes_on_loopback_pass_with_global_ranks(script):
    """Two agents of one c10d job on 127.0.0.1, 2 ranks each: the script all_reduces over all 4 ranks."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-c",
        "import sys; from fsdp_skill.main import main; sys.exit(main())",
        "verify",
        str(script),
        "--launcher",
        "torchrun",
        "--nnodes",
        "2",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        f"127.0.0.1:{port}",
        "--rdzv-id",
        f"test-{port}",
        "--timeout",
        "150",
        "--json",
    ]
    procs = [
        subprocess.Popen(
            [*cmd, "--node-rank", str(r)],
            cwd=script.parent,
            env=dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in (0, 1)
    ]
    results = [p.communicate(timeout=240) for p in procs]
    verdicts = []
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, (out, err)
        (v,) = json.loads(out)
        assert v["status"] == "passed", v["reason"]
        assert v["world_size"] == 4 and v["nnodes"] == 2 and v["launcher"] == "torchrun"
        assert "2 nodes, c10d rendezvous at 127.0.0.1:" in v["reason"]
        verdicts.append(v)
    seen = sorted(r["rank"] for v in verdicts for r in v["ranks"])
    assert seen == [0, 1, 2, 3]
    for v in verdicts:
        for r in v["ranks"]:
            assert f"rank {r['rank']} of 4" in r["output_tail"] and "sum 6.0" in r["output_tail"]
    assert not (state_path() / "verdicts").exists() or not list((state_path() / "verdicts").iterdir())


def test_console_joins_a_line_torch_elastic_copied_in_pieces():
    # the tail thread read "STATE " before the worker wrote the rest: the rest follows with the prefix again,
    # on the same console line, and another rank's piece can come between
    text = (
        "[default0]:LEAKED [] STATE [default0]:/tmp/x\n"
        "[default1]:start [default0]:a [default1]:end\n"
        "[default0]:b\n"
        "[default1@3]:tail without newline"
    )
    per_rank, known = _console(text, 2, None)
    assert per_rank == {0: ["LEAKED [] STATE /tmp/x", "a b"], 1: ["start end", "tail without newline"]}
    assert known == {1: 3}


def test_console_keeps_text_of_other_ranks_and_of_the_agent_out():
    per_rank, _ = _console("agent says [default0]:x\n[default7]:not ours\n[default0]:mine [default9]:kept\n", 2, None)
    assert per_rank == {0: ["mine [default9]:kept"], 1: []}
