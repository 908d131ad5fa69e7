"""FSD009's second shape: ``new_group`` given a list of ranks that differs between the ranks.

``torch.distributed.new_group`` must be called by every process of the default group, in the same order, with the
same ``ranks``. A list built from this process's rank (``new_group([rank, rank ^ 1])``, ``members =
perm[start:start + 2]`` after ``while rank not in perm[start:start + 2]: start += 2``) gives each process its own
list, so the calls do not match and group creation or the first collective on the group hangs. A name counts as
built from the rank when an assignment, a loop target or a name assigned in a ``while`` / ``for`` body whose test
or iterable reads the rank (or such a name) binds it, in the same function; a parameter the file's callers give a
rank (``self.rank``, ``dist.get_rank()``) counts by its name (``rank``) as ``is_rank_expr`` tells it. The fix is
every process creating every group in the same order and keeping the one that holds it. A call under a rank
condition is FSD009's first shape (reported by :mod:`~fsdp_skill.core.check.rank_conditional`), not again here;
a call given ``use_local_synchronization=`` is not reported (with it only the members call ``new_group``).
"""

from __future__ import annotations

import ast

from fsdp_skill.core.check.facts import FileFacts, kwarg
from fsdp_skill.core.check.finders import Found, finder

_CREATORS = {"torch.distributed.new_group", "torch.distributed.distributed_c10d.new_group"}
_ROUNDS = 4  # passes over a function to follow names derived from names derived from the rank


def _reads_rank(facts: FileFacts, expr: ast.AST, derived: set[str]) -> bool:
    return any(isinstance(x, ast.Name) and x.id in derived or facts.is_rank_expr(x) for x in ast.walk(expr))


def _bound_names(nodes: list[ast.stmt]) -> set[str]:
    """Names assigned (``=``, ``+=``, annotated) anywhere in ``nodes``."""
    out: set[str] = set()
    for stmt in nodes:
        for n in ast.walk(stmt):
            targets = (
                n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else []
            )
            out |= {x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)}
    return out


def _assigned_from_rank(facts: FileFacts, n: ast.Assign | ast.AugAssign | ast.AnnAssign, derived: set[str]) -> set[str]:
    """The names ``n`` binds to a value read from the rank: element by element for ``a, b = x, y`` (``rank, world =
    dist.get_rank(), dist.get_world_size()`` makes only ``rank`` one), else every target when the value reads it."""
    value = n.value
    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
    pairs: list[tuple[ast.AST, ast.AST]] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and len(t.elts) == len(value.elts):
            pairs += list(zip(t.elts, value.elts, strict=True))
        elif value is not None:
            pairs.append((t, value))
    return {x.id for t, v in pairs if _reads_rank(facts, v, derived) for x in ast.walk(t) if isinstance(x, ast.Name)}


def _rank_derived(facts: FileFacts, scope: ast.AST) -> set[str]:
    """Names of ``scope`` that hold a value built from this process's rank (see the module docstring); memoised."""
    memo: dict[int, set[str]] = facts.cache.setdefault(("group_rules", "derived"), {})
    if id(scope) in memo:
        return memo[id(scope)]
    derived: set[str] = set()
    nodes = facts.scope_nodes(scope)
    for _ in range(_ROUNDS):
        known = len(derived)
        for n in nodes:
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                derived |= _assigned_from_rank(facts, n, derived)
            elif isinstance(n, ast.While) and _reads_rank(facts, n.test, derived):
                derived |= _bound_names(n.body)
            elif isinstance(n, (ast.For, ast.AsyncFor)) and _reads_rank(facts, n.iter, derived):
                derived |= _bound_names([ast.Assign(targets=[n.target], value=n.iter)]) | _bound_names(n.body)
        if len(derived) == known:
            break
    memo[id(scope)] = derived
    return derived


@finder("FSD009")
def new_group_of_rank_derived_ranks(facts: FileFacts) -> Found:
    """FSD009 (second shape): ``new_group(ranks)`` with ``ranks`` built from this process's rank."""
    branches = facts.rank_branches()
    for call in facts.calls():
        if facts.qual(call) not in _CREATORS or branches.get(id(call)) or kwarg(call, "use_local_synchronization"):
            continue
        ranks = kwarg(call, "ranks", 0)
        if ranks is None or not _reads_rank(facts, ranks, _rank_derived(facts, facts.scope_of(call))):
            continue
        yield (
            call,
            (
                f"the ranks given to new_group ({ast.unparse(ranks)}) are built from this process's rank, so each process "
                "passes its own list"
            ),
        )
