"""Rules about Accelerate's context managers put around the wrong code (FSD089, FSD090).

- **FSD089**: ``with accelerator.accumulate(model):`` around a loop whose body runs the backward (``for step, batch
  in enumerate(loader): ... accelerator.backward(loss)``) instead of inside it around one step. The context decides
  once, when it is entered, whether this is a step that syncs the gradients and steps the optimizer; entered once per
  epoch it makes the same decision for every batch of the loop: no accumulation at all, or an optimizer that never
  steps. Silent for a loop that runs no backward and for a context entered in the loop's body.
- **FSD090**: ``from_pretrained`` of a model (not a tokenizer, config or processor) inside ``with
  accelerator.main_process_first():`` (``local_main_process_first``, ``training_args.main_process_first``) in a
  file that configures DeepSpeed ZeRO stage 3 (``DeepSpeedPlugin(zero_stage=3)``, a ``{"stage": 3}`` config):
  under ZeRO-3, ``from_pretrained`` builds the model inside ``deepspeed.zero.Init``, whose parameter partitioning
  is collective, while ``main_process_first`` makes the other ranks wait in a barrier until the main process has
  left the block: the main process's collectives have no peers and the job hangs. Silent with
  ``zero3_init_flag=False`` written in the file.
"""

from __future__ import annotations

import ast
import re

from fsdp_skill.core.check.facts import FileFacts, dotted, last_name
from fsdp_skill.core.check.finders import Found, finder

_FIRST = {"main_process_first", "local_main_process_first"}
_NOT_WEIGHTS = ("tokenizer", "processor", "config", "feature_extractor", "image_processor", "dataset")
_MODEL_CLASS = re.compile(r"Model|For[A-Z]")


def _body_nodes(stmts: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``stmts``, not those of nested functions or classes."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _accelerator(facts: FileFacts, node: ast.AST) -> bool:
    """Does ``node`` name an Accelerate ``Accelerator`` (by its name, or bound to ``Accelerator(...)``)?"""
    if "accelerator" in (dotted(node) or "").lower():
        return True
    value = facts.resolve(node)
    return isinstance(value, ast.Call) and (facts.qual(value) or "").endswith("Accelerator")


@finder("FSD089")
def accumulate_around_the_loop(facts: FileFacts) -> Found:
    """FSD089: ``accelerator.accumulate(model)`` entered once around a loop that runs the backward."""
    for node in facts.nodes:
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        for item in node.items:
            ctx = item.context_expr
            if not (isinstance(ctx, ast.Call) and isinstance(ctx.func, ast.Attribute) and ctx.func.attr == "accumulate"):
                continue
            if not _accelerator(facts, ctx.func.value):
                continue
            loop = next(
                (
                    n
                    for n in _body_nodes(node.body)
                    if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
                    and any(isinstance(c, ast.Call) and last_name(c) == "backward" for c in _body_nodes(n.body))
                ),
                None,
            )
            if loop is not None:
                yield (
                    ctx,
                    f"{dotted(ctx.func)}() is entered once around the loop at line {loop.lineno}, whose every iteration "
                    "runs a backward",
                )


def _zero3(facts: FileFacts) -> bool:
    """ZeRO stage 3 written in the file (``zero_stage=3``, ``{"stage": 3}``) and ``zero3_init_flag=False`` nowhere."""
    found = False
    for n in facts.nodes:
        if isinstance(n, ast.keyword) and isinstance(n.value, ast.Constant):
            if n.arg == "zero3_init_flag" and n.value.value is False:
                return False
            found = found or n.arg == "zero_stage" and n.value.value == 3
        elif isinstance(n, ast.Dict):
            found = found or any(
                isinstance(k, ast.Constant) and k.value == "stage" and isinstance(v, ast.Constant) and v.value == 3
                for k, v in zip(n.keys, n.values, strict=False)
            )
    return found


def _model_load(call: ast.Call) -> bool:
    """``X.from_pretrained(...)`` of a model class (``AutoModelForCausalLM``, ``PeftModel``), not a tokenizer's."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "from_pretrained"):
        return False
    owner = dotted(call.func.value) or ""
    tail = owner.rsplit(".", 1)[-1]
    return bool(_MODEL_CLASS.search(tail)) and not any(w in owner.lower() for w in _NOT_WEIGHTS)


@finder("FSD090")
def zero3_load_in_main_process_first(facts: FileFacts) -> Found:
    """FSD090: a ZeRO-3 ``from_pretrained`` inside ``main_process_first()`` (see the module docstring)."""
    if not _zero3(facts):
        return
    for node in facts.nodes:
        if not isinstance(node, (ast.With, ast.AsyncWith)):
            continue
        first = next(
            (
                it.context_expr
                for it in node.items
                if isinstance(it.context_expr, ast.Call) and last_name(it.context_expr) in _FIRST
            ),
            None,
        )
        if first is None:
            continue
        for n in _body_nodes(node.body):
            if isinstance(n, ast.Call) and _model_load(n):
                yield (
                    n,
                    f"{dotted(n.func) or 'from_pretrained'}() runs inside {dotted(first.func) or 'main_process_first'}() "
                    f"(line {first.lineno}) in a file that configures ZeRO stage 3",
                )
