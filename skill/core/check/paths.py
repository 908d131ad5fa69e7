"""Which files a call writes or reads, directly or through the functions of the checked file (FSD055, FSD056).

- :func:`written_path` / :func:`read_path`: the path argument of a write (``torch.save(obj, path)``,
  ``x.save_pretrained(path)``, ``accelerator.save(obj, path)``, ``open(path, "w")``) or a read (``torch.load(path)``,
  ``X.from_pretrained(path)``, ``open(path)``); :func:`made_dir` the directory of ``os.makedirs(path)``.
- :func:`writes` / :func:`reads`: the same for a call of a function of the file (a module-level one, a nested one,
  a method through ``self.``) whose body writes or reads a path given by one of its parameters, directly or through
  another such function: ``save_checkpoint(model, out)`` whose body runs ``torch.save(sd, os.path.join(out,
  "ckpt.pt"))`` writes below ``out``. The result is a :class:`Access`: the expression at the call site and whether
  the file is that expression itself or a path built from it (a directory's file).
- :func:`same_file`: do a write and a read name the same file (the same expression, after following each name to
  the value it was last assigned), or does one name a path built from the other's directory?
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from fsdp_skill.core.check import calls as callgraph
from fsdp_skill.core.check import rank_conditional as rc
from fsdp_skill.core.check.facts import FileFacts, dotted, kwarg, last_name

_SAVE_FUNCS = {"torch.save": 1, "numpy.save": 0, "safetensors.torch.save_file": 1}  # where the path is
_LOAD_FUNCS = {"torch.load", "numpy.load", "safetensors.torch.load_file"}
_MAKEDIRS = {"os.makedirs", "os.mkdir"}
_ROUNDS = 3  # helper-of-a-helper depth followed by the summaries
_FOLDERS = {"save_pretrained", "from_pretrained"}  # their path is a directory: the files are below it


@dataclass(frozen=True)
class Access:
    """A file a call writes or reads, as the call site names it."""

    path: ast.expr
    """The expression at the call site (the path, or the directory a helper builds the path below)"""
    exact: bool = True
    """The file is ``path`` itself (False: a path built from it, ``os.path.join(path, "ckpt.pt")``)"""
    helper: str | None = None
    """The function of the file that does the access, when it is not the call itself (``save_checkpoint``)"""
    line: int = 0
    """1-based line of the access itself (inside ``helper`` when there is one)"""


def written_path(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The path ``call`` writes: ``torch.save(obj, path)``, ``x.save_pretrained(path)``, ``accelerator.save(obj,
    path)``, ``open(path, "w")``; else None."""
    q = facts.qual(call) or ""
    if q in _SAVE_FUNCS:
        at = _SAVE_FUNCS[q]
        return kwarg(call, "f", at) if q == "torch.save" else (call.args[at] if len(call.args) > at else None)
    name = last_name(call)
    if name == "save_pretrained":
        return kwarg(call, "save_directory", 0)
    if name == "save" and isinstance(call.func, ast.Attribute) and "accelerator" in (dotted(call.func.value) or "").lower():
        return call.args[1] if len(call.args) > 1 else kwarg(call, "f")
    if q == "open" and call.args:
        mode = kwarg(call, "mode", 1)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(m in mode.value for m in "wax"):
            return call.args[0]
    return None


def read_path(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The path ``call`` reads: ``torch.load(path)``, ``X.from_pretrained(path)``, ``open(path)`` (read mode); else
    None."""
    q = facts.qual(call) or ""
    if q in _LOAD_FUNCS:
        return kwarg(call, "f", 0) if q == "torch.load" else (call.args[0] if call.args else None)
    if last_name(call) == "from_pretrained":
        return kwarg(call, "pretrained_model_name_or_path", 0)
    if q == "open" and call.args:
        mode = kwarg(call, "mode", 1)
        if mode is None or isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "r" in mode.value:
            return call.args[0]
    return None


def made_dir(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The directory ``os.makedirs(d)`` / ``os.mkdir(d)`` creates (the files below it need it), else None."""
    return kwarg(call, "name", 0) if facts.qual(call) in _MAKEDIRS else None


def writes(facts: FileFacts, call: ast.Call) -> Access | None:
    """The file ``call`` writes: itself, or through a function of the file (see the module docstring); else None."""
    path = written_path(facts, call)
    if path is not None:
        return Access(path, exact=last_name(call) not in _FOLDERS, line=call.lineno)
    return _through(facts, call, "writes")


def guarded_writes(facts: FileFacts, call: ast.Call) -> Access | None:
    """The file ``call`` writes through a function of the file that writes it under a rank condition of its own
    body (``def save(d, m): if dist.get_rank() == 0: torch.save(m.state_dict(), os.path.join(d, "m.pt"))``), given
    by one of its parameters, and synchronises nothing after that condition; else None (FSD055)."""
    target = callgraph.callee(facts, call)
    if target is None or target.fn is None or target.fn is facts.scope_of(call):
        return None
    summary = facts.cache.get(("paths", "guarded"))
    if summary is None:
        summary = facts.cache[("paths", "guarded")] = _guarded_summary(facts)
    if target.key is None or target.key not in summary:
        return None
    index, exact, line, name = summary[target.key]
    arg = dict(callgraph.bound_args(call, target)).get(index)
    return Access(arg, exact=exact, helper=name, line=line) if arg is not None else None


def _guarded_summary(facts: FileFacts) -> _Summary:
    """Function key -> the parameter whose file it writes under a rank condition of its own body, when nothing in the
    function after that condition is a call (a barrier or anything else that may synchronise)."""
    out: _Summary = {}
    branches = facts.rank_branches()
    for fkey, fn in callgraph.local_functions(facts).items():
        params = _params(fn)
        for node in facts.scope_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            inner = [b for b in branches.get(id(node), []) if isinstance(b, ast.If) and facts.scope_of(b) is fn]
            if not inner:
                continue
            path = written_path(facts, node)
            got = _param_of(facts, fn, path, params) if path is not None else None
            if got is None:
                continue
            last = (inner[0].end_lineno or inner[0].lineno, inner[0].end_col_offset or 0)
            if any(
                isinstance(n, ast.Call) and (n.lineno, n.col_offset) > last and not _plain(facts, n)
                for n in facts.scope_nodes(fn)
            ):
                break  # something after the guarded write may make the others wait
            out[fkey] = (got[0], got[1] and last_name(node) not in _FOLDERS, node.lineno, _shown(fkey))
            break
    return out


_PLAIN = {"print", "len", "str", "int", "float", "format", "join", "dirname", "basename", "exists", "info", "debug"}


def _plain(facts: FileFacts, call: ast.Call) -> bool:
    """Is ``call`` one that cannot synchronise the ranks (``print``, ``os.path.join``, a logger's ``info``)?"""
    return (last_name(call) or "") in _PLAIN


def reads(facts: FileFacts, call: ast.Call) -> Access | None:
    """The file ``call`` reads: itself, or through a function of the file (see the module docstring); else None."""
    path = read_path(facts, call)
    if path is not None:
        return Access(path, exact=last_name(call) not in _FOLDERS, line=call.lineno)
    return _through(facts, call, "reads")


# function key -> (parameter index, exact, line of the access inside, the helper's name for a message)
_Summary = dict[str, tuple[int, bool, int, str]]
_Direct = Callable[[FileFacts, ast.Call], "ast.expr | None"]


def _through(facts: FileFacts, call: ast.Call, kind: str) -> Access | None:
    target = callgraph.callee(facts, call)
    if target is None or target.fn is None or target.fn is facts.scope_of(call):
        return None
    summary = _summaries(facts, kind)
    if target.key not in summary:
        return None
    index, exact, line, name = summary[target.key]
    arg = dict(callgraph.bound_args(call, target)).get(index)
    return Access(arg, exact=exact, helper=name, line=line) if arg is not None else None


def _summaries(facts: FileFacts, kind: str) -> _Summary:
    """Function key -> how it writes (``kind`` 'writes') or reads ('reads') a path given by a parameter (memoised;
    a fixpoint of :data:`_ROUNDS` passes for helpers that hand the path on)."""
    key = ("paths", kind)
    if key not in facts.cache:
        facts.cache[key] = _summarise(facts, written_path if kind == "writes" else read_path)
    found: _Summary = facts.cache[key]
    return found


def _summarise(facts: FileFacts, direct: _Direct) -> _Summary:
    """One scan of each function for its own accesses and its calls of the file's functions, then a few rounds over
    those calls alone (a helper that hands the path to another)."""
    out: _Summary = {}
    handing: list[tuple[str, callgraph.Function, list[tuple[ast.Call, callgraph.Callee]]]] = []
    for fkey, fn in callgraph.local_functions(facts).items():
        params = _params(fn)
        local: list[tuple[ast.Call, callgraph.Callee]] = []
        for node in facts.scope_nodes(fn):
            if not isinstance(node, ast.Call):
                continue
            path = direct(facts, node)
            got = _param_of(facts, fn, path, params) if path is not None else None
            if got is not None:
                out[fkey] = (got[0], got[1] and last_name(node) not in _FOLDERS, node.lineno, _shown(fkey))
                break
            target = callgraph.callee(facts, node)
            if target is not None and target.fn is not None and target.fn is not fn:
                local.append((node, target))
        else:
            if local:
                handing.append((fkey, fn, local))
    for _ in range(_ROUNDS):
        known = len(out)
        for fkey, fn, local in handing:
            if fkey not in out and (found := _handed_on(facts, fn, fkey, local, out)) is not None:
                out[fkey] = found
        if len(out) == known:
            break
    return out


def _shown(fkey: str) -> str:
    return fkey.replace(".<locals>.", ".")


def _params(fn: callgraph.Function) -> tuple[str, ...]:
    return tuple(a.arg for a in fn.args.posonlyargs + fn.args.args)


def _handed_on(
    facts: FileFacts, fn: callgraph.Function, fkey: str, local: list[tuple[ast.Call, callgraph.Callee]], known: _Summary
) -> tuple[int, bool, int, str] | None:
    """(parameter index, exact, line, name) when ``fn`` hands a path given by its parameter to a function of
    ``known`` (``def save(m, d): write_file(m, d)``)."""
    params = _params(fn)
    for node, target in local:
        if target.key not in known:
            continue
        index, exact, line, _ = known[target.key]
        path = dict(callgraph.bound_args(node, target)).get(index)
        got = _param_of(facts, fn, path, params) if path is not None else None
        if got is not None:
            return got[0], exact and got[1], line, _shown(fkey)
    return None


def _param_of(facts: FileFacts, fn: callgraph.Function, path: ast.expr, params: tuple[str, ...]) -> tuple[int, bool] | None:
    """(index, is the path the parameter itself) of the parameter of ``fn`` that ``path`` is or is built from
    (through names assigned in ``fn``), else None."""
    value = facts.resolve(path)
    if isinstance(value, ast.Name) and _is_param(facts, fn, value, params):
        return params.index(value.id), True
    for n in ast.walk(value) if value is not None else []:
        if isinstance(n, ast.Name):
            inner = facts.resolve(n)
            if isinstance(inner, ast.Name) and _is_param(facts, fn, inner, params):
                return params.index(inner.id), False
    return None


def _is_param(facts: FileFacts, fn: callgraph.Function, name: ast.Name, params: tuple[str, ...]) -> bool:
    if name.id not in params or name.id in ("self", "cls") or facts.scope_of(name) is not fn:
        return False
    _, b = facts.binding(name)
    return b is not None and b.kind == "param"


def _texts(facts: FileFacts, node: ast.expr) -> set[str]:
    """The texts of ``node`` and of the value it was last assigned (a name followed a few steps); a value returned
    by a function of the file that returns one of its parameters (``d = save_state(os.path.join(root, name), m)``
    with ``return run_dir``) is the argument given for it too."""
    out = {rc.node_text(node)}
    value = facts.resolve(node)
    if value is not None and value is not node:
        out.add(rc.node_text(value))
        if isinstance(value, ast.Call):
            handed = _returned_argument(facts, value)
            if handed is not None:
                out |= {rc.node_text(handed), rc.node_text(facts.resolve(handed) or handed)}
    return out


def _returned_argument(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The argument of ``call`` that its function (of this file) returns as it is: every ``return`` of the function
    gives the same parameter, unrebound; else None."""
    target = callgraph.callee(facts, call)
    if target is None or target.fn is None:
        return None
    params = _params(target.fn)
    returned = {
        n.value.id
        for n in facts.scope_nodes(target.fn)
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and _is_param(facts, target.fn, n.value, params)
    }
    returns = [n for n in facts.scope_nodes(target.fn) if isinstance(n, ast.Return)]
    if len(returned) != 1 or not all(isinstance(n.value, ast.Name) and n.value.id in returned for n in returns):
        return None
    return dict(callgraph.bound_args(call, target)).get(params.index(returned.pop()))


def _below(facts: FileFacts, folder: ast.expr, path: ast.expr) -> bool:
    """Is ``path`` (or the value it was assigned) built from the expression ``folder`` (a sub-expression of it)?"""
    want = _texts(facts, folder)
    value = facts.resolve(path) or path
    return any(rc.node_text(n) in want for n in ast.walk(value) if isinstance(n, ast.expr))


def same_file(facts: FileFacts, write: Access, read: Access) -> bool:
    """Do ``write`` and ``read`` name the same file (see the module docstring)?"""
    if write.exact and read.exact:
        return bool(_texts(facts, write.path) & _texts(facts, read.path))
    if not write.exact and not read.exact:
        return bool(_texts(facts, write.path) & _texts(facts, read.path))  # both below the same directory
    folder, path = (write.path, read.path) if not write.exact else (read.path, write.path)
    return _below(facts, folder, path)


# --- module state dicts in checkpoint files (FSD069) -----------------------------------------------------


def state_dict_of(facts: FileFacts, value: ast.AST | None) -> ast.AST | None:
    """The module whose ``.state_dict()`` ``value`` is (through names), else None."""
    value = facts.resolve(value)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "state_dict":
        return value.func.value
    return None


def saved_states(facts: FileFacts, call: ast.Call) -> list[tuple[object, ast.AST]]:
    """(dict key or None, module) for each module state dict ``torch.save(obj, path)`` writes: ``obj`` itself or a
    value of a dict literal (``{"model": ddp.state_dict(), ...}``)."""
    obj = facts.resolve(kwarg(call, "obj", 0))
    owner = state_dict_of(facts, obj)
    if owner is not None:
        return [(None, owner)]
    out: list[tuple[object, ast.AST]] = []
    if isinstance(obj, ast.Dict):
        for k, v in zip(obj.keys, obj.values, strict=True):
            owner = state_dict_of(facts, v)
            if owner is not None and isinstance(k, ast.Constant):
                out.append((k.value, owner))
    return out


def loaded_state(facts: FileFacts, value: ast.AST | None) -> tuple[object, ast.expr] | None:
    """(dict key or None, path) when ``value`` is ``torch.load(path)`` or ``torch.load(path)[key]`` (through names)."""
    value = facts.resolve(value)
    key: object = None
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant):
        key, value = value.slice.value, facts.resolve(value.value)
    if isinstance(value, ast.Call) and facts.qual(value) == "torch.load":
        path = kwarg(value, "f", 0)
        return (key, path) if path is not None else None
    return None


# (module parameter index, path parameter index, repr of the dict key or of None) of each state dict a function saves
# or loads through its parameters (``torch.save({"model": model.state_dict()}, path)``)
Traffic = tuple[tuple[int, int, str], ...]


def state_traffic(facts: FileFacts, fn: callgraph.Function) -> tuple[Traffic, Traffic]:
    """(saves, loads) of ``fn``: each module state dict its body writes to a path given by a parameter, from a module
    given by a parameter (``torch.save({"model": model.state_dict()}, path)``), and each it loads the same way
    (``model.load_state_dict(torch.load(path)["model"])``): what a caller in another checked file needs to tell
    whose keys the file holds (FSD069)."""
    params = _params(fn)
    saves: list[tuple[int, int, str]] = []
    loads: list[tuple[int, int, str]] = []
    for node in facts.scope_nodes(fn):
        if not isinstance(node, ast.Call):
            continue
        if facts.qual(node) == "torch.save":
            where = _param_of(facts, fn, kwarg(node, "f", 1) or node, params)
            if where is None or not where[1]:
                continue
            for key, owner in saved_states(facts, node):
                module = _param_of(facts, fn, owner, params) if isinstance(owner, ast.Name) else None
                if module is not None and module[1]:
                    saves.append((module[0], where[0], repr(key)))
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "load_state_dict":
            got = loaded_state(facts, kwarg(node, "state_dict", 0))
            where = _param_of(facts, fn, got[1], params) if got else None
            module = _param_of(facts, fn, node.func.value, params) if isinstance(node.func.value, ast.Name) else None
            if got and where and where[1] and module is not None and module[1]:
                loads.append((module[0], where[0], repr(got[0])))
    return tuple(saves), tuple(loads)
