# file-run: loaded by file by the zygote (under the user's interpreter); standard library only (tests/test_layers.py)
"""Every environment variable fsdp-skill reads (``FSDP_SKILL_*``), in one list: name, default, what it does, who reads it.

A reader names a variable through this module's constant (``knobs.HOME``), never by its literal:
tests/test_knobs.py fails on any other ``FSDP_SKILL_`` string in the code of ``skill/`` and ``runtime/``, checks
each knob's ``readers`` against the code, and checks README's table ("Environment variables") against
:func:`markdown_table`.  To add a knob: a constant and a :class:`Knob` entry here, the reader using the
constant, the README row (``markdown_table()`` prints it).

Standard library only and nothing done at import: the zygote, which runs as a file under the user's
interpreter, loads it by file (``load_sibling("knobs")``); package modules import ``fsdp_skill.runtime.knobs``.
"""

from __future__ import annotations

from typing import NamedTuple

PREFIX = "FSDP_SKILL_"  # every knob starts with it; no variable that does reaches a rank (rankenv.scrubbed_env)

HOME = "FSDP_SKILL_HOME"
KNOWLEDGE = "FSDP_SKILL_KNOWLEDGE"
PYTHON = "FSDP_SKILL_PYTHON"
KEEP_RUNS = "FSDP_SKILL_KEEP_RUNS"
WARM_EXIT = "FSDP_SKILL_WARM_EXIT"
CONFIRM_TIMEOUTS = "FSDP_SKILL_CONFIRM_TIMEOUTS"
PRELOAD = "FSDP_SKILL_PRELOAD"
CHECK_BUDGET = "FSDP_SKILL_CHECK_BUDGET"
PLAN_QUEUE = "FSDP_SKILL_PLAN_QUEUE"
SCRIPT_SESSION_BYTES = "FSDP_SKILL_SCRIPT_SESSION_BYTES"


class Knob(NamedTuple):
    """One environment variable: ``default`` and ``effect`` are README's words, ``readers`` the repository's
    files that read it (through this module's constant that holds ``name``), ``state`` whether it says where
    the tool keeps its state or which interpreter it targets (such a variable never reaches the warm
    launcher's zygote, whose environment its ranks could read in ``/proc``)."""

    name: str
    default: str
    effect: str
    readers: tuple[str, ...]
    state: bool = False


KNOBS: tuple[Knob, ...] = (
    Knob(
        HOME,
        "the user cache directory (`~/.cache/fsdp-skill`)",
        "where fsdp-skill keeps its state: verdict cache, API signatures, error atlas, parsed cards and router "
        "index; one that is a file, cannot be created or is not writable is one line and exit 1",
        ("runtime/cache.py", "skill/core/state.py"),
        state=True,
    ),
    Knob(
        KNOWLEDGE,
        "the cards shipped in the package (`knowledge/`)",
        "a directory of knowledge cards to load instead (e.g. while writing a card)",
        ("skill/core/knowledge/cards.py",),
        state=True,
    ),
    Knob(
        PYTHON,
        "fsdp-skill's own interpreter",
        "the target interpreter: its torch runs the ranks and answers API and host questions; `--python PATH` "
        "sets it for the process and its children (`serve --workers N`)",
        ("runtime/target.py", "skill/core/interpreter.py"),
        state=True,
    ),
    Knob(
        KEEP_RUNS,
        "unset: a run's directory is removed when it ends",
        "any non-empty value keeps each run's directory (`${TMPDIR:-/tmp}/run-*`: each rank's output, traceback and "
        "stack dump, torchrun's logs, a snippet's script) instead of removing it; for debugging a run",
        ("runtime/launch.py",),
    ),
    Knob(
        WARM_EXIT,
        "unset: warm ranks finalize the interpreter at exit, as under torchrun",
        "`fast`: warm ranks end with `os._exit` after the script (about 0.3 s less per rank, blind to crashes in "
        "interpreter teardown); part of the verdict cache key",
        ("runtime/launch.py", "runtime/zygote.py", "runtime/cache.py"),
    ),
    Knob(
        CONFIRM_TIMEOUTS,
        "`1`: a warm timeout is rerun under torchrun, whose verdict is reported",
        "`0`: report a warm launcher's timeout as it is, without the torchrun rerun (a hang you expect, faster)",
        ("runtime/policy.py",),
    ),
    Knob(
        PRELOAD,
        "the zygote's own list (`PRELOAD` in `runtime/zygote.py`: torch and its distributed modules)",
        "comma-separated modules the warm zygote imports before it forks ranks, instead of its list "
        "(`benchmarks/bench_verify.py` compares preloads)",
        ("runtime/zygote.py",),
    ),
    Knob(
        CHECK_BUDGET,
        "`10`: seconds",
        "CPU seconds of analysis `check` gives one file (CLI, `POST /v1/check`, MCP `check_script`, flake8 plugin); a file "
        "that needs more is one `FSD000` finding naming the budget, and the other files are still checked; not a "
        "positive number: exit 2 (HTTP: 400; read by the server at each request and handed to its check worker)",
        ("skill/adapters/http/check_worker.py", "skill/core/check/engine.py"),
    ),
    Knob(
        PLAN_QUEUE,
        "`4`: plans",
        "plans that may wait behind the one being measured (`POST /v1/plan`, MCP `plan_memory`, function calls; "
        "one queue per process); a plan that finds them all taken is refused at once (HTTP 429 with `Retry-After`, "
        "an MCP tool error); `0`: none wait; not an integer 0..1000: HTTP 400 / a tool error",
        ("skill/core/plan/queue.py",),
    ),
    Knob(
        SCRIPT_SESSION_BYTES,
        "`536870912`: bytes (512 MiB)",
        "cap on the bytes under the session directory of `mcp --allow-run-scripts` (MCP `verify_script`'s working "
        "directories and the session HOME); before a run that finds it over the cap, the other working directories "
        "are removed, least recently used first, and a run whose own working directory is over it is refused (a tool "
        "error); not a positive integer: a tool error",
        ("skill/core/verify/workdirs.py",),
    ),
)

STATE = tuple(k.name for k in KNOBS if k.state)  # where the tool keeps its state and which interpreter it targets
ZYGOTE = (PRELOAD, WARM_EXIT)  # the only FSDP_SKILL_* variables the warm launcher's zygote is given (it reads them)


def markdown_table() -> str:
    """README's table of the knobs (one row per :data:`KNOBS` entry, in order), as markdown."""
    rows = ["| variable | default | what it does | read by |", "|---|---|---|---|"]
    for k in KNOBS:
        readers = ", ".join(f"`{r}`" for r in k.readers)
        rows.append(f"| `{k.name}` | {k.default} | {k.effect} | {readers} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # python runtime/knobs.py prints README's table
    print(markdown_table(), end="")
