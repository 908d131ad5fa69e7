# file-run: started as a file under the user's interpreter; standard library and torch only (tests/test_layers.py)
"""Live API signatures from torch: ``python introspect.py [--frame NONCE] NAME...`` prints a JSON list, one per name.

    [{"name": "torch.distributed.fsdp.fully_shard", "available": true, "signature": "fully_shard(module, ...)",
      "summary": "Apply fully sharded data parallelism ..."}, ...]

Runs under the *target* interpreter (``--python PATH``) as a file, so it needs nothing but the standard
library and torch (no fsdp_skill, no pydantic).  The tool imports it for its own interpreter
(:mod:`fsdp_skill.core.apis`).  A name that does not resolve gives ``available: false`` and a ``summary``
saying so; importing torch is what costs (seconds).
"""

import importlib
import inspect
import json
import re
import sys
import warnings

SUMMARY_CHARS = 400
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+>")


def resolve(name):
    """Import the longest module prefix of a dotted ``name`` and getattr the rest.

    Returns the object; raises ``LookupError`` when any part is missing.
    """
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                raise LookupError(f"{name}: {'.'.join(parts[:cut])} has no attribute {attr!r}") from None
        return obj
    raise LookupError(f"{name}: no importable module prefix")


def describe(name):
    """Signature and first docstring paragraph of ``name`` in this interpreter's torch, as a dict with
    ``name``, ``available``, ``signature`` (None when inspect cannot tell) and ``summary``."""
    try:
        obj = resolve(name)
    except LookupError:
        return {"name": name, "available": False, "signature": None, "summary": "not found in the installed torch"}
    try:
        label = obj.__name__ if inspect.isclass(obj) else getattr(obj, "__name__", name.rsplit(".", 1)[-1])
        # a default that is a function or object prints its address (<function f at 0x7f...>): drop it, so the
        # signature is the same in every process
        signature = _ADDRESS.sub(">", f"{label}{inspect.signature(obj)}")
    except (TypeError, ValueError):
        signature = None
    doc = inspect.getdoc(obj) or ""
    summary = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0].replace("\n", " ").strip() if doc else None
    if summary and len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rstrip() + "…"
    return {"name": name, "available": True, "signature": signature, "summary": summary}


def torch_import_error():
    """None when ``import torch`` works here, else one line: "torch failed to import: ImportError: ...".

    A torch that is installed but broken (a missing shared library, an ABI mismatch) must not be read
    as "every API is missing"."""
    try:
        importlib.import_module("torch")
    except Exception as exc:  # anything torch's import can raise: ImportError, OSError, RuntimeError, ...
        first = str(exc).strip().splitlines()[:1] or [""]
        return f"torch failed to import: {type(exc).__name__}: {first[0]}"
    return None


def main(names, frame=None):
    """Print the JSON list of :func:`describe` for ``names`` on stdout; returns the exit code (0).

    With a nonce ``frame`` (``--frame NONCE``, how the tool runs it) the line is framed as
    ``@fsdp-skill-result:NONCE [...]`` (runtime/framing.py), so what else is printed is not taken for it.
    When torch does not import, prints nothing and writes that reason as the last stderr line (exit 3)."""
    warnings.simplefilter("ignore")  # deprecation warnings of torch modules imported on the way
    broken = torch_import_error()
    if broken:
        sys.stderr.write(broken + "\n")
        return 3
    line = json.dumps([describe(n) for n in names], ensure_ascii=False)
    if frame is not None:
        line = "@fsdp-skill-result:" + frame + " " + line
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    here = sys.path[0]
    sys.path[:] = [p for p in sys.path if p != here]  # `python introspect.py` put the harness folder first
    args = sys.argv[1:]
    nonce = None
    if args[:1] == ["--frame"] and len(args) >= 2:
        nonce, args = args[1], args[2:]
    sys.exit(main(args, nonce))
