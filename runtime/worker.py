# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
# private torch internals used here: torch._logging._internal._init_logs (re-reads TORCH_LOGS in a forked rank;
#   skipped with a one-line warning on a torch that lacks it)
"""What runs inside a rank process: torchrun's environment, the script as ``__main__``, a faithful exit.

Used by the zygote (:mod:`fsdp_skill.runtime.zygote`) in each forked rank.  Nothing here imports torch at module
level; the helpers that touch torch run only inside a rank.
"""

from __future__ import annotations

import os
import sys


def _sync_distributed_debug() -> None:
    import torch.distributed as dist

    dist.set_debug_level_from_env()  # what MultiProcessTestCase does in its subprocesses too


def _sync_logs() -> None:
    try:
        from torch._logging._internal import _init_logs
    except ImportError:  # a torch without the private helper: TORCH_LOGS set by the script is not re-read
        import sys

        print(
            "fsdp-skill: this torch lacks torch._logging._internal._init_logs; TORCH_LOGS set in the script is ignored",
            file=sys.stderr,
        )
        return
    _init_logs()


# Environment variables torch reads once, during `import torch`, and how to re-read them.  A fresh
# interpreter would see the values the script sets before its first torch import; the zygote imported
# torch long before, so a rank replays these reads at the script's first torch import instead.
IMPORT_TIME_ENV = {
    "TORCH_DISTRIBUTED_DEBUG": _sync_distributed_debug,
    "TORCH_LOGS": _sync_logs,
    "TORCH_LOGS_OUT": _sync_logs,
    "TORCH_LOGS_FORMAT": _sync_logs,
}


def install_import_time_env_sync(baseline: dict[str, str]) -> None:
    """Replay torch's import-time environment reads at the first ``import torch...`` the script runs,
    for each variable in IMPORT_TIME_ENV whose value then differs from ``baseline`` (the preload's)."""
    import builtins

    original = builtins.__import__

    def sync() -> None:
        done = set()
        for var, fn in IMPORT_TIME_ENV.items():
            if os.environ.get(var) != baseline.get(var) and fn not in done:
                done.add(fn)
                fn()

    def hooked(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "torch" or name.startswith("torch.")) and builtins.__import__ is hooked:
            builtins.__import__ = original
            sync()
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = hooked


def rank_env(rank: int, world_size: int, port: int, run_id: str) -> dict[str, str]:
    """The environment torchrun (``--standalone``, one node) gives worker ``rank``."""
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "GROUP_RANK": "0",
        "ROLE_RANK": str(rank),
        "ROLE_NAME": "default",
        "LOCAL_WORLD_SIZE": str(world_size),
        "WORLD_SIZE": str(world_size),
        "GROUP_WORLD_SIZE": "1",
        "ROLE_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "TORCHELASTIC_RESTART_COUNT": "0",
        "TORCHELASTIC_MAX_RESTARTS": "0",
        "TORCHELASTIC_RUN_ID": f"fsdp-skill-{run_id}",
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
    }


def run_script(script: str, tb_path: str, args: list[str] | None = None) -> int:
    """Run ``script`` as ``__main__`` the way ``python script.py ARGS`` would (``sys.argv`` is
    ``[script, *args]``); returns the process exit code.

    An uncaught exception is printed to stderr (frames of this harness trimmed; a script that does not
    compile gets only its SyntaxError) and also written to
    ``tb_path``.  Then the interpreter's exit is replayed (:func:`_interpreter_exit`).
    """
    import runpy
    import traceback

    sys.argv = [script, *(args or ())]
    sys.path[0] = os.path.dirname(script)
    code = 0
    alive: list = []  # what a real interpreter keeps until its finalization: __main__'s globals, sys.last_*
    try:
        alive.append(runpy.run_path(script, run_name="__main__"))
    except SystemExit as exc:
        code = _exit_code(exc)
        alive.append(exc)
    except BaseException as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        # None when no frame is the script's (it did not compile): then, as under `python script.py`, only
        # the exception is printed (a SyntaxError shows the script's file, line and caret), no harness frame.
        text = "".join(traceback.format_exception(type(exc), exc, tb))
        try:
            with open(tb_path, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError:
            pass
        exc.__traceback__ = tb  # hooks that format the exception itself (torch's "[rankN]:" hook) see it trimmed
        try:
            sys.excepthook(type(exc), exc, tb)
        except BaseException:
            sys.stderr.write(text)
        code = 1
        alive.append(exc)  # like sys.last_value: frames and their locals live until finalization
    _interpreter_exit(alive)
    return code


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except BaseException:
        pass
    return 1


def _interpreter_exit(alive: list) -> None:
    """Replay the user-visible part of an interpreter exit, in its order: join non-daemon threads, run
    atexit handlers, then drop the script's globals (and a failing frame's locals) and collect garbage,
    so the script's objects (models, process groups) are destroyed as during finalization.  The caller
    then ``os._exit``s, skipping the teardown of the preloaded modules and C++ static destructors."""
    import atexit
    import gc
    import threading

    # threading._shutdown (CPython's own, not in typeshed) joins the non-daemon threads as an exiting interpreter does
    for step in (threading._shutdown, atexit._run_exitfuncs):  # type: ignore[attr-defined]
        try:
            step()
        except BaseException:
            pass
    try:
        for item in alive:
            if isinstance(item, dict):
                item.clear()
        alive.clear()
        gc.collect()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
