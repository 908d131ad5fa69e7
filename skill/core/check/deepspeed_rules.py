"""Finder of the rule about the DeepSpeed engine's training step (FSD082).

- FSD082: ``loss.backward()`` on a loss computed from the forward of a DeepSpeed engine (what
  ``deepspeed.initialize(...)`` returns first, followed through names, parameters, helpers' returns and ``self.``
  attributes by :func:`~fsdp_skill.core.check.calls_rules.bound_call`), in the same function, where
  ``engine.backward(loss)`` was meant: the engine's backward is what scales the loss for gradient accumulation and
  fp16, and what averages the gradients across the ranks at the accumulation boundary, so a plain backward leaves
  each rank stepping on its own gradients. Silent where the engine cannot be told (a file that does not import
  deepspeed, a model that is not the engine) and for ``engine.backward(loss)`` / ``accelerator.backward(loss)``.
"""

from __future__ import annotations

import ast

from fsdp_skill.core.check.calls_rules import deepspeed_engine
from fsdp_skill.core.check.data_rules import feeds_backward  # FSD068 uses it too
from fsdp_skill.core.check.facts import FileFacts, dotted
from fsdp_skill.core.check.finders import Found, finder


def _plain_backward(facts: FileFacts, call: ast.Call) -> bool:
    """``x.backward(...)`` of a tensor (no positional loss, not ``engine.backward(loss)``)?"""
    func = call.func
    return (
        isinstance(func, ast.Attribute) and func.attr == "backward" and not call.args and not deepspeed_engine(facts, func.value)
    )


def _engine_forward(facts: FileFacts, call: ast.Call) -> bool:
    """``engine(x)`` / ``engine.forward(x)`` of a DeepSpeed engine?"""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    return isinstance(func, (ast.Name, ast.Attribute)) and deepspeed_engine(facts, func)


@finder("FSD082")
def backward_around_the_engine(facts: FileFacts) -> Found:
    """FSD082: a plain ``loss.backward()`` of a DeepSpeed engine's output (see the module docstring)."""
    if not any(full.split(".")[0] == "deepspeed" for full in facts.aliases.values()):
        return
    seen: set[int] = set()
    for call in facts.calls():
        if not _engine_forward(facts, call):
            continue
        back = feeds_backward(facts, call)
        if back is None or id(back) in seen or not _plain_backward(facts, back):
            continue
        seen.add(id(back))
        engine = dotted(call.func.value if isinstance(call.func, ast.Attribute) and call.func.attr == "forward" else call.func)
        loss = dotted(back.func.value) if isinstance(back.func, ast.Attribute) else None
        yield (
            back,
            f"`{loss or '...'}.backward()` backpropagates the output of the DeepSpeed engine `{engine}` (line {call.lineno})",
        )
