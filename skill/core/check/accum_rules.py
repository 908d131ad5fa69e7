"""Finder of the rule about gradient accumulation that still all-reduces every micro-batch (FSD083).

- FSD083 (info, a cost, not a wrong result): a training loop that accumulates gradients by hand (a ``backward`` on
  every iteration, the optimizer's ``step()`` only under a ``%`` test: ``if (step + 1) % accum_steps == 0:``) in a
  file whose model is wrapped by ``DistributedDataParallel(...)`` or handed to ``accelerator.prepare(...)``, where
  the file never turns the gradient sync off (no ``no_sync`` / ``no_backward_sync``, ``accelerator.accumulate``,
  ``require_backward_grad_sync``, ``set_requires_gradient_sync``, ``Accelerator(gradient_accumulation_steps=...)``):
  each backward runs DDP's full gradient all-reduce, so N micro-batches cost N all-reduces where one is needed.
  Silent for FSDP and DeepSpeed files (their accumulation is another mechanism), for a backward under a condition
  inside the loop, and for an optimizer step that is not under a ``%`` test.
"""

from __future__ import annotations

import ast

from fsdp_skill.core.check.facts import FileFacts, dotted, kwarg, last_name
from fsdp_skill.core.check.finders import Found, finder

_SYNC_OFF = {"no_sync", "no_backward_sync", "accumulate", "require_backward_grad_sync", "set_requires_gradient_sync"}
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _sync_turned_off(facts: FileFacts) -> bool:
    """Does the file name a way to skip the gradient all-reduce, or give Accelerate the accumulation steps?"""
    for n in facts.nodes:
        if isinstance(n, ast.Attribute) and n.attr in _SYNC_OFF or isinstance(n, ast.Name) and n.id in _SYNC_OFF:
            return True
        if isinstance(n, ast.Call) and kwarg(n, "gradient_accumulation_steps") is not None and last_name(n) == "Accelerator":
            return True
    return False


def _replicated(facts: FileFacts) -> str | None:
    """``DDP`` / ``Accelerate``: how the file replicates the model with a per-backward all-reduce, else None (FSDP
    and DeepSpeed files: None)."""
    if facts.fsdp1 or facts.fsdp2 or any(full.split(".")[0] == "deepspeed" for full in facts.aliases.values()):
        return None
    if facts.ddp or any(facts.qual(c) == "torch.nn.parallel.DistributedDataParallel" for c in facts.calls()):
        return "DDP"
    quals = {(facts.qual(c) or "").rsplit(".", 1)[-1] for c in facts.calls()}
    if "Accelerator" in quals and any(last_name(c) == "prepare" for c in facts.calls()):
        return "Accelerate"
    return None


def _own_nodes(loop: ast.AST) -> list[tuple[ast.AST, list[ast.AST]]]:
    """The nodes of ``loop``'s body with the ``if`` / loop statements between the loop and each, not entering
    nested functions or classes."""
    out: list[tuple[ast.AST, list[ast.AST]]] = []
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(st, []) for st in getattr(loop, "body", [])]
    while stack:
        node, guards = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        out.append((node, guards))
        inner = [*guards, node] if isinstance(node, (ast.If, ast.IfExp, ast.Try, *_LOOPS)) else guards
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return out


def _is_backward(call: ast.Call) -> bool:
    """``loss.backward()`` or ``accelerator.backward(loss)`` / ``scaler.scale(loss).backward()``."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "backward"


def _is_optimizer_step(call: ast.Call) -> bool:
    """``optimizer.step()`` / ``self.opt.step()`` / ``scaler.step(optimizer)``."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return False
    owner = (dotted(call.func.value) or "").lower()
    return "optim" in owner.rsplit(".", 1)[-1] or owner.rsplit(".", 1)[-1] == "opt" or "scaler" in owner and bool(call.args)


def _modulo(test: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


@finder("FSD083")
def accumulation_without_no_sync(facts: FileFacts) -> Found:
    """FSD083: a hand-written accumulation loop under DDP / Accelerate that never skips the all-reduce."""
    how = _replicated(facts)
    if how is None or _sync_turned_off(facts):
        return
    for loop in facts.nodes:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        nodes = _own_nodes(loop)
        backwards = [n for n, guards in nodes if isinstance(n, ast.Call) and _is_backward(n) and not guards]
        optimizer_steps = [(n, guards) for n, guards in nodes if isinstance(n, ast.Call) and _is_optimizer_step(n)]
        steps = [(n, g) for n, guards in optimizer_steps for g in guards if isinstance(g, ast.If) and _modulo(g.test)]
        if backwards and steps and all(guards for _, guards in optimizer_steps):
            test = steps[0][1]
            yield (
                backwards[0],
                f"a {how} model whose optimizer steps only under the `%` test at line {test.lineno}, with no no_sync() "
                "in the file",
            )
