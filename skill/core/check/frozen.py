"""Which modules are *partly* frozen where FSDP1 wraps them (FSD031): some of their parameters have
``requires_grad=False`` and others not, which FSDP1 cannot flatten into one ``FlatParameter`` without
``use_orig_params=True``.

A module is partly frozen in a scope (a function, or the module body; ``self.`` attributes across the methods of
their class) when that scope

- freezes a proper part of it: ``model.backbone.requires_grad_(False)``, ``model.weight.requires_grad = False``,
  ``for p in model.encoder.parameters(): p.requires_grad = False``;
- freezes some of its parameters chosen by a test: ``for name, p in model.named_parameters(): if "lora" not in
  name: p.requires_grad_(False)``;
- freezes all of it, then turns a part back on (``model.requires_grad_(False); model.head.requires_grad_(True)``);
- binds it from ``get_peft_model(...)`` (PEFT freezes the base model and trains the adapters);
- hands it to a function of the file that does one of these to its parameter (``freeze_backbone(model)``), or
  binds it from a function of the file that returns such a module (``model = build_lora_model(cfg)``).

A parameter of a function (``def wrap(model): return FSDP(model, ...)``) is partly frozen when a call of that
function in the file passes it such a module: a name partly frozen where the call is, or a call that returns one
(``wrap(load_lora_model(path))``); so is a ``self.`` attribute a method binds from such a parameter
(``def __init__(self, model): self.model = model``, the class called as ``Trainer(lora_model)``).

Freezing the whole module (a reference or teacher model: ``ref.requires_grad_(False)``) is uniform and is not
partial."""

from __future__ import annotations

import ast

from fsdp_skill.core.check import calls as callgraph
from fsdp_skill.core.check.facts import FileFacts, dotted, last_name

_PARAM_METHODS = {"parameters", "named_parameters"}
_PEFT = {"get_peft_model"}
_ROUNDS = 3  # helper-of-a-helper depth


def partly_frozen(facts: FileFacts, scope: ast.AST) -> set[str]:
    """Dotted names of the modules partly frozen in ``scope`` (see the module docstring), memoised; the ``self.``
    names of every method of ``scope``'s class are included."""
    memo: dict[int, set[str]] = facts.cache.setdefault(("frozen", "scope"), {})
    if id(scope) not in memo:
        memo[id(scope)] = _scope_partial(facts, scope) | _class_partial(facts, scope)
    return memo[id(scope)]


def _class_partial(facts: FileFacts, scope: ast.AST) -> set[str]:
    cls = facts.parents.get(id(scope))
    if not isinstance(cls, ast.ClassDef):
        return set()
    out: set[str] = set()
    for fn in cls.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn is not scope:
            out |= {n for n in _scope_partial(facts, fn) if n.startswith("self.")}
    return out


def _scope_partial(facts: FileFacts, scope: ast.AST) -> set[str]:
    memo: dict[int, set[str]] = facts.cache.setdefault(("frozen", "own"), {})
    if id(scope) in memo:
        return memo[id(scope)]
    memo[id(scope)] = set()  # a recursive helper sees nothing of itself
    whole: set[str] = set()
    partial: set[str] = set()
    unfrozen: list[str] = []
    for node in facts.scope_nodes(scope):
        if isinstance(node, ast.Call):
            _call(facts, node, partial, whole, unfrozen)
        elif isinstance(node, ast.Assign):
            _assign(facts, node, partial, whole, unfrozen)
    for name in unfrozen:
        parts = name.split(".")
        partial |= {p for i in range(1, len(parts)) if (p := ".".join(parts[:i])) in whole}
    memo[id(scope)] = partial
    return partial


def _call(facts: FileFacts, node: ast.Call, partial: set[str], whole: set[str], unfrozen: list[str]) -> None:
    if isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_" and node.args:
        flag = node.args[0]
        if isinstance(flag, ast.Constant) and flag.value in (False, True):
            _record(facts, node, node.func.value, flag.value is False, partial, whole, unfrozen)
        return
    target = callgraph.callee(facts, node)
    if target is None or target.fn is None or target.fn is facts.scope_of(node):
        return
    frozen_params, _ = _helper(facts, target.fn)
    for i, arg in callgraph.bound_args(node, target):
        if i in frozen_params and (name := dotted(arg)):
            partial.add(name)


def _assign(facts: FileFacts, node: ast.Assign, partial: set[str], whole: set[str], unfrozen: list[str]) -> None:
    value = node.value
    if isinstance(value, ast.Constant) and value.value in (False, True):
        for t in node.targets:
            if isinstance(t, ast.Attribute) and t.attr == "requires_grad":
                _record(facts, node, t.value, value.value is False, partial, whole, unfrozen)
        return
    if _returns_partial(facts, value):
        partial |= {name for t in node.targets if (name := dotted(t))}


def _returns_partial(facts: FileFacts, value: ast.AST) -> bool:
    """Is ``value`` ``get_peft_model(...)`` or a call of a function of the file that returns a partly frozen module?"""
    if not isinstance(value, ast.Call):
        return False
    if last_name(value) in _PEFT:
        return True
    target = callgraph.callee(facts, value)
    return (
        target is not None and target.fn is not None and target.fn is not facts.scope_of(value) and _helper(facts, target.fn)[1]
    )


def given_partly_frozen(facts: FileFacts, scope: ast.AST, name: str) -> tuple[bool, bool]:
    """For ``name``, a parameter of the function ``scope`` that the function does not rebind: (does a call of that
    function in the file pass it a partly frozen module, is that module a PEFT model)."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False, False
    if name.startswith("self.") and name.count(".") == 1:
        return _given_to_class(facts, scope, name)
    params = [a.arg for a in scope.args.posonlyargs + scope.args.args]
    if name not in params or any(b.kind != "param" for b in facts.bindings.get((id(scope), name), [])):
        return False, False
    index = params.index(name)
    partial = peft = False
    for site in _sites(facts, scope):
        target = callgraph.callee(facts, site)
        if target is None or target.fn is not scope:
            continue
        for i, arg in callgraph.bound_args(site, target):
            if i != index:
                continue
            where = facts.scope_of(site)
            got = dotted(arg)
            if got is not None and got in partly_frozen(facts, where):
                partial, peft = True, peft or got in peft_models(facts, where)
            elif got is None and _returns_partial(facts, arg):
                partial, peft = True, peft or _returns_peft(facts, arg)
    return partial, peft


def _given_to_class(facts: FileFacts, scope: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> tuple[bool, bool]:
    """For ``self.model`` in a method: a method of the class (``__init__``) binds it from one of its parameters
    (``self.model = model``) that a call of the file passes a partly frozen module (``Trainer(lora_model)``)."""
    cls = facts.parents.get(id(scope))
    if not isinstance(cls, ast.ClassDef):
        return False, False
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for n in facts.scope_nodes(fn):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and any(dotted(t) == name for t in n.targets):
                got = given_partly_frozen(facts, fn, n.value.id)
                if got[0]:
                    return got
    return False, False


def _sites(facts: FileFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """The calls in the file by ``fn``'s name, a class's name for its ``__init__`` (memoised by name: one pass over
    the calls per name asked)."""
    memo: dict[str, list[ast.Call]] = facts.cache.setdefault(("frozen", "sites"), {})
    if not memo:
        for c in facts.calls():
            if (n := last_name(c)) is not None:
                memo.setdefault(n, []).append(c)
        memo.setdefault("", [])
    cls = facts.parents.get(id(fn))
    if fn.name == "__init__" and isinstance(cls, ast.ClassDef):
        return memo.get(cls.name, [])
    return memo.get(fn.name, [])


def peft_models(facts: FileFacts, scope: ast.AST) -> set[str]:
    """Dotted names ``scope`` binds from ``get_peft_model(...)`` (directly or through a function of the file that
    returns one), memoised."""
    memo: dict[int, set[str]] = facts.cache.setdefault(("frozen", "peft"), {})
    if id(scope) not in memo:
        memo[id(scope)] = {
            name
            for n in facts.scope_nodes(scope)
            if isinstance(n, ast.Assign) and _returns_peft(facts, n.value)
            for t in n.targets
            if (name := dotted(t))
        }
    return memo[id(scope)]


def _returns_peft(facts: FileFacts, value: ast.AST, depth: int = 0) -> bool:
    if not isinstance(value, ast.Call) or depth > _ROUNDS:
        return False
    if last_name(value) in _PEFT:
        return True
    target = callgraph.callee(facts, value)
    if target is None or target.fn is None or target.fn is facts.scope_of(value):
        return False
    returned = [n.value for n in facts.scope_nodes(target.fn) if isinstance(n, ast.Return) and n.value is not None]
    return any(_returns_peft(facts, facts.resolve(r) or r, depth + 1) for r in returned)


def _helper(facts: FileFacts, fn: callgraph.Function) -> tuple[set[int], bool]:
    """(indices of the parameters ``fn`` leaves partly frozen, does it return a partly frozen module), memoised."""
    memo: dict[int, tuple[set[int], bool]] = facts.cache.setdefault(("frozen", "helper"), {})
    if id(fn) not in memo:
        memo[id(fn)] = (set(), False)  # recursion: nothing yet
        partial = _scope_partial(facts, fn)
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        frozen = {i for i, p in enumerate(params) if p in partial and p not in ("self", "cls")}
        returns = any(
            isinstance(n, ast.Return)
            and n.value is not None
            and ((dotted(n.value) or "") in partial or _returns_partial(facts, n.value))
            for n in facts.scope_nodes(fn)
        )
        memo[id(fn)] = (frozen, returns)
    return memo[id(fn)]


def _record(
    facts: FileFacts,
    stmt: ast.AST,
    owner: ast.AST,
    freeze: bool,
    partial: set[str],
    whole: set[str],
    unfrozen: list[str],
) -> None:
    """Note a ``requires_grad`` change of ``owner`` (a module, a parameter, or a loop variable over parameters)."""
    name, selective = _owner(facts, stmt, owner)
    if name is None:
        return
    if not freeze:
        unfrozen.append(name)
        return
    parts = name.split(".")
    partial |= {".".join(parts[:i]) for i in range(1, len(parts))}  # every module above the frozen part
    (partial if selective else whole).add(name)


def _owner(facts: FileFacts, stmt: ast.AST, owner: ast.AST) -> tuple[str | None, bool]:
    """(dotted name of the module whose parameters ``owner`` is or ranges over, is the change made on some of its
    parameters only: a test between the loop and the change)."""
    if isinstance(owner, ast.Name):
        _, b = facts.binding(owner)
        if b is not None and b.kind == "for" and b.value is not None:
            module = _iterated_module(b.value)
            loop = facts.parents.get(id(b.value))
            selective = any(isinstance(a, ast.If) for a in _between(facts, stmt, loop))
            return (_name(module) if module is not None else None), selective
    return _name(owner), False


def _name(node: ast.AST) -> str | None:
    """``model.encoder`` for a Name/Attribute chain, ``model.[*]`` for ``model[0]`` (a part of ``model``)."""
    if isinstance(node, ast.Subscript):
        base = _name(node.value)
        return f"{base}.[*]" if base else None
    return dotted(node)


def _iterated_module(it: ast.AST) -> ast.AST | None:
    """``model.encoder`` of ``model.encoder.parameters()`` / ``named_parameters()`` (also inside ``list(...)``)."""
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("list", "enumerate") and it.args:
        it = it.args[0]
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in _PARAM_METHODS:
        return it.func.value
    return None


def _between(facts: FileFacts, node: ast.AST, top: ast.AST | None) -> list[ast.AST]:
    """The nodes that hold ``node`` below ``top`` (innermost first); empty when ``top`` does not hold it."""
    out: list[ast.AST] = []
    for anc in facts.ancestors(node):
        if anc is top:
            return out
        out.append(anc)
    return []
