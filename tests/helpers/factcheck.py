"""Check what cards state about APIs against the installed torch, by introspection.

Two kinds of claims are read from the backticked code spans of a section's prose, for the APIs the
section lists (matched by their last name, e.g. ``Join`` for ``torch.distributed.algorithms.Join``):

* **keyword names**: every ``name=...`` in a call such as ``fully_shard(m, reshard_after_forward=2)``
  must be a parameter of the real signature (unless it takes ``**kwargs``);
* **restated signatures**: a call that names most of the real parameters (>= 80 %, at least three),
  e.g. ``Join(joinables, enable=True, throw_on_early_termination=False, **kwargs)``, states defaults:
  each ``name=<literal>`` must equal the real default.

Used by the test suite; imports torch (through :func:`fsdp_skill.core.apis.resolve`).
"""
from __future__ import annotations

import ast
import inspect
import re

from fsdp_skill.core.apis import resolve
from fsdp_skill.core.models import SectionDoc

_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```.*?```", re.S)


def _calls(section: SectionDoc, short: str) -> list[ast.Call]:
    prose = _FENCE.sub("", section.text)
    out = []
    for span in _SPAN.findall(prose):
        span = span.strip()
        if not re.match(rf"^(?:[\w.]+\.)?{re.escape(short)}\(.*\)$", span):
            continue
        try:
            node = ast.parse(span, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call):
            out.append(node)
    return out


def check_section(section: SectionDoc) -> list[str]:
    """Contradictions between the section's prose and the installed torch, as readable lines."""
    problems: list[str] = []
    for api in section.apis:
        try:
            obj = resolve(api)
            sig = inspect.signature(obj)
        except (LookupError, TypeError, ValueError):
            continue
        params = {n: p for n, p in sig.parameters.items() if n != "self"}
        named = [n for n, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
        for call in _calls(section, api.rsplit(".", 1)[-1]):
            where = f"{section.card}:{section.line} ({section.id}) `{ast.unparse(call)}`"
            mentioned = [a.id for a in call.args if isinstance(a, ast.Name)] + [k.arg for k in call.keywords if k.arg]
            for kw in call.keywords:
                if kw.arg and kw.arg not in params and not var_kw:
                    problems.append(f"{where}: {api} has no parameter {kw.arg!r} in torch {_version()}")
            restated = len(set(mentioned) & set(named)) >= max(3, 0.8 * len(named))
            if not restated:
                continue
            for kw in call.keywords:
                if kw.arg not in params:
                    continue
                try:
                    claimed = ast.literal_eval(kw.value)
                except ValueError:
                    continue
                if claimed is Ellipsis:  # `f(device=...)`: a placeholder, not a claim
                    continue
                real = params[kw.arg].default
                if real is inspect.Parameter.empty:
                    problems.append(f"{where}: {kw.arg!r} is stated with default {claimed!r} but is required")
                elif real != claimed and not (real is None and claimed is None):
                    problems.append(f"{where}: default of {kw.arg!r} is {real!r} in torch {_version()}, the card says {claimed!r}")
    return problems


def _version() -> str:
    import torch

    return torch.__version__
