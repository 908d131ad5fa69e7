"""What a rank's output says about its own error, with the harness taken out.

Shared by both launchers through :mod:`fsdp_skill.runtime.report`:

    scrub(text)            drop the harness's frames (this package, runpy, torch elastic/torchrun) and
                           faulthandler's "Extension modules:" list from a log, traceback or stack dump
    exception_message(tb)  the final exception of a traceback, every line of its message
    native_error(log)      for a native crash: the C++ message (``what()``) or the fatal error, and the
                           faulthandler dump printed with it
    in_torch_distributed(text)  whether a traceback or dump passes through torch.distributed (a collective)
"""

from __future__ import annotations

import os
import re
from typing import overload

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PREFIX = r"(?:\[(?:rank|default)\d+\]:)?"  # torch's excepthook prefixes each line with "[rankN]:"
_FILE = re.compile(_PREFIX + r'\s*File "(?P<file>[^"]+)", line \d+')
_SOURCE = re.compile(_PREFIX + "    ")
_HARNESS_PARTS = ("/torch/distributed/run.py", "/torch/distributed/elastic/", "/torch/distributed/launcher/", "/runpy.py")
_FATAL = re.compile(r"^Fatal Python error: (?P<what>.+)$", re.M)
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
MESSAGE_CHARS = 4000


def is_harness_file(path: str) -> bool:
    """Whether a frame's file belongs to the harness that started the script, not to the user or torch."""
    if path.startswith("<frozen runpy") or path.startswith(_RUNTIME_DIR):
        return True
    return any(part in path for part in _HARNESS_PARTS)


@overload
def scrub(text: str) -> str: ...
@overload
def scrub(text: None) -> None: ...
def scrub(text: str | None) -> str | None:
    """``text`` without harness frames (a traceback frame's source and caret lines go with it) and without
    faulthandler's ``Extension modules: ...`` line; None stays None."""
    if not text:
        return text
    out: list[str] = []
    skipping = False
    for line in text.splitlines():
        m = _FILE.match(line)
        if m:
            skipping = is_harness_file(m["file"])
            if not skipping:
                out.append(line)
            continue
        if skipping and _SOURCE.match(line):
            continue  # the skipped frame's source line and its ^^^ markers
        skipping = False
        if line.startswith("Extension modules: "):
            if out and not out[-1].strip():
                out.pop()
            continue
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def exception_message(tb: str | None) -> str | None:
    """The final exception of ``tb`` as ``'Type: message'``, every line of a multi-line message kept
    (at most MESSAGE_CHARS characters); None when there is none."""
    if not tb:
        return None
    block = tb[tb.rfind("Traceback (most recent call last):") :] if "Traceback (most recent" in tb else tb
    lines = block.strip("\n").splitlines()
    start = None
    for i, line in enumerate(lines):
        if i == 0 and line.startswith("Traceback (most recent"):
            continue
        if line.strip() and not line[0].isspace():
            start = i
            break
    if start is None:
        return None
    text = "\n".join(lines[start:]).strip()
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"


def native_error(log: str | None) -> tuple[str | None, str | None]:
    """``(message, dump)`` of a native crash reported in ``log``, or ``(None, None)``.

    The message is the C++ exception that ended the process (``'gloo::EnforceNotMet: [enforce fail at
    ...] ...'`` from ``terminate called after throwing ... what(): ...``), else faulthandler's fatal error
    (``'Fatal Python error: Segmentation fault'``).  The dump is faulthandler's text from that line on,
    harness frames removed.
    """
    if not log:
        return None, None
    fatals = list(_FATAL.finditer(log))
    if not fatals:
        return None, None
    fatal = fatals[-1]
    before = log[: fatal.start()]
    what = before.rfind("what():")
    message = f"Fatal Python error: {fatal['what'].strip()}"
    if what >= 0:
        text = before[what + len("what():") :].strip()
        kinds = list(_TERMINATE.finditer(before[:what]))
        kind = kinds[-1] if kinds else None
        if text:
            message = f"{kind['type']}: {text}" if kind else text
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 1] + "…"
    return message, scrub(log[fatal.start() :]).strip() + "\n"


def in_torch_distributed(text: str | None) -> bool:
    """Whether a traceback or faulthandler dump has a frame in torch.distributed (outside the launcher)."""
    for line in (text or "").splitlines():
        m = _FILE.match(line)
        if m and "/torch/distributed/" in m["file"] and not is_harness_file(m["file"]):
            return True
    return False
