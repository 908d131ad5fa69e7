"""Check what cards state about APIs against the installed torch, by introspection.

Two kinds of claims are read from the backticked code spans of a section's prose, for the APIs the
section lists (matched by their last name, e.g. ``Join`` for ``torch.distributed.algorithms.Join``):

* **keyword names**: every ``name=...`` in a call such as ``fully_shard(m, reshard_after_forward=2)``
  must be a parameter of the real signature (unless it takes ``**kwargs``);
* **restated signatures**: a call that names most of the real parameters (>= 80 %, at least three),
  e.g. ``Join(joinables, enable=True, throw_on_early_termination=False, **kwargs)``, states defaults:
  each ``name=<literal>`` must equal the real default;
* **stated defaults**: a span ``name=<literal>`` right after "default(s) (is/to):" or right before "by
  default" / "(default)" / "is the default", or a span ``name`` followed by "default(s) (to/is)
  ``<literal>``" or "(default ``<literal>``)", where ``name`` is a
  parameter of a listed callable or a field of a listed dataclass (``MixedPrecisionPolicy``,
  ``CPUOffloadPolicy``, ``StateDictOptions``, ...), must equal the real default (dataclass fields are
  read with :func:`dataclasses.fields`, defaults of ``default_factory`` fields are not checked);
* **enum members**: a span ``Enum.MEMBER`` for a listed :class:`enum.Enum` (``ShardingStrategy``,
  ``BackwardPrefetch``, ``StateDictType``, ...) must name a real member.

Used by the test suite; imports torch (through :func:`fsdp_skill.core.apis.resolve`).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
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


_MISSING = object()
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n\s*\n|\n(?=\s*[-*|] )")
_NAME_EQ = re.compile(r"^(?:[\w.]+\.)?(\w+)=(.+)$")
# "default `x=1`", "the default: `x=1`", "defaults to `x=1`" / "`x=1` by default", "`x=1` (default)"
_DEFAULT_BEFORE = re.compile(r"(?i)\bdefaults?(?: is| to)?:?\s*$")
_DEFAULT_AFTER = re.compile(r"(?i)^\s*(?:by default|\((?:the )?default\)|is the default\b)")
_NAME_THEN_DEFAULT = re.compile(r"`(\w+)`[^`]{0,40}?\(?defaults?\)?(?: to| is| =|:)?\s+`([^`]+)`")


def _literal(text: str):
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return _MISSING


def _defaults(obj) -> dict[str, object]:
    """name -> default of a dataclass's fields, or of a callable's parameters (empty when unknown)."""
    if dataclasses.is_dataclass(obj) and isinstance(obj, type):
        return {f.name: f.default for f in dataclasses.fields(obj) if f.default is not dataclasses.MISSING}
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in sig.parameters.items() if p.default is not inspect.Parameter.empty}


def _stated_defaults(section: SectionDoc) -> list[tuple[str, object, str]]:
    """(name, literal, sentence) for every default the prose states in a sentence saying 'default'."""
    prose = _FENCE.sub("", section.text)
    out = []
    for sentence in _SENTENCE.split(prose):
        if "default" not in sentence.lower():
            continue
        for sm in _SPAN.finditer(sentence):
            m = _NAME_EQ.match(sm.group(1).strip())
            close = bool(_DEFAULT_BEFORE.search(sentence[: sm.start()]) or _DEFAULT_AFTER.match(sentence[sm.end() :]))
            if m and close and "(" not in sm.group(1) and _literal(m.group(2)) is not _MISSING:
                out.append((m.group(1), _literal(m.group(2)), sentence.strip()))
        for name, lit in _NAME_THEN_DEFAULT.findall(sentence):
            if _literal(lit) is not _MISSING:
                out.append((name, _literal(lit), sentence.strip()))
    return out


def _same(real, claimed) -> bool:
    if isinstance(real, enum.Enum):
        return claimed in (real, real.value, real.name)
    try:
        return bool(real == claimed) and type(real) is not bool or real is claimed
    except Exception:
        return False


def _check_stated_defaults(section: SectionDoc, objs: dict[str, object]) -> list[str]:
    problems = []
    stated = _stated_defaults(section)
    for name, claimed, sentence in stated:
        owners = [(api, d[name]) for api, obj in objs.items() if name in (d := _defaults(obj))]
        if not owners or any(_same(real, claimed) for _, real in owners):
            continue  # not a known name, or true for one of the listed APIs
        api, real = owners[0]
        problems.append(
            f"{section.card}:{section.line} ({section.id}): default of {name!r} of {api} is {real!r} "
            f"in torch {_version()}, the card says {claimed!r} (in: {sentence[:120]!r})"
        )
    return problems


def _check_enum_members(section: SectionDoc, objs: dict[str, object]) -> list[str]:
    problems = []
    enums = {api.rsplit(".", 1)[-1]: obj for api, obj in objs.items() if isinstance(obj, type) and issubclass(obj, enum.Enum)}
    prose = _FENCE.sub("", section.text)
    for short, cls in enums.items():
        for member in re.findall(rf"`(?:[\w.]+\.)?{re.escape(short)}\.([A-Z][A-Z0-9_]*)\b", prose):
            if member not in cls.__members__:
                problems.append(
                    f"{section.card}:{section.line} ({section.id}): {short}.{member} is not a member in torch "
                    f"{_version()} (members: {', '.join(cls.__members__)})"
                )
    return problems


def check_section(section: SectionDoc) -> list[str]:
    """Contradictions between the section's prose and the installed torch, as readable lines."""
    objs = {}
    for api in section.apis:
        try:
            objs[api] = resolve(api)
        except (LookupError, TypeError, ValueError):
            continue
    problems: list[str] = _check_stated_defaults(section, objs) + _check_enum_members(section, objs)
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
                    problems.append(
                        f"{where}: default of {kw.arg!r} is {real!r} in torch {_version()}, the card says {claimed!r}"
                    )
    return problems


def _version() -> str:
    import torch

    return torch.__version__
