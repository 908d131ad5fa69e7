"""One plan request: what every door of ``plan`` takes, each knob once (its type, default, limit and description).

    PlanKnobs          the knobs every door takes: the run knobs shared with a Setting (RunKnobs: batch, seq,
                       optimizer, activation_checkpointing, cpu_offload) and those in their text forms
                       (world_size or mesh 'RxS', dtypes with 'none', reshard_after_forward as a bool, an int or
                       text), gpu_memory_gib, sweep
    PlanRequest        PlanKnobs + the built-in transformer (its sizes as the CLI's text or as the object a
                       report's ``transformer`` holds): the body of ``POST /v1/plan`` and the arguments of the MCP
                       tool ``plan_memory``, as they are
    LocalPlanRequest   PlanKnobs + the CLI's own fields: the transformer or the factory form (``model``,
                       ``input``: the user's code, ``--model FILE.py:FN``), and ``timeout``; ``fsdp-skill plan``
                       builds it from argparse

Why two request classes over one set of knobs: the factory form names code the planner imports and calls, so
it may come only from the user's own command line.  PlanRequest has no such field at all (the HTTP app and the
MCP server publish PlanRequest's schema, and its ``extra="forbid"`` refuses a ``model`` field), while its
sibling LocalPlanRequest adds it; nothing converts one into the other.  ``timeout`` is the CLI's too: a plan
asked over HTTP or MCP runs under the server's :data:`SERVED_TIMEOUT_S`.

Both are strict like every HTTP and MCP body: wrong JSON types are refused, not coerced (``"8"`` or ``8.0`` for
an int, ``"true"`` for a bool), and so are unknown fields (a pydantic ValidationError: HTTP 422, an MCP tool
error, one CLI line).  What a schema cannot say is checked when the request is read, with InvalidArgument
(exit 2, HTTP 400): the transformer's text and its cross-field rules, world_size given with mesh, the mesh and
reshard texts, the sweep, a setting over the limits (:mod:`.spec` holds them, once), and for PlanRequest (a plan
asked over HTTP or MCP) the served size bound :data:`MAX_SERVED_WORK` (rows x blocks x ranks).

    request.settings() -> list[Setting]    the rows to plan: the sweep's combinations over the base setting
    request.models()                       (TransformerSpec | None, factory | None, input factory | None)
    request.gpu_bytes() -> int | None      request.timeout_s() -> float (seconds)
    request.command_line() -> str          the ready ``fsdp-skill plan ...`` line for the first setting

:func:`flag` names the CLI option of each field; :func:`command_line` writes a setting back as options.  The
planner's child (``child.py``, a file run under the user's interpreter) cannot import any of this:
tests/test_plan_request.py parses it and checks that every key it reads is a Setting field or one that
:func:`~.report.child_request` writes.
"""

from __future__ import annotations

import shlex
from abc import abstractmethod
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from fsdp_skill.core.plan.runner import DEFAULT_TIMEOUT_S
from fsdp_skill.core.plan.spec import (
    MAX_SWEEP_AXES,
    MAX_SWEEP_ROWS,
    MAX_WORLD_SIZE,
    SWEEP_KEYS,
    RunKnobs,
    Setting,
    TransformerSpec,
    format_size,
    parse_mesh,
    parse_reshard,
    parse_transformer,
    settings_for,
)
from fsdp_skill.errors import InvalidArgument
from fsdp_skill.runtime.api import MAX_TIMEOUT_S

SERVED_TIMEOUT_S = 300.0  # seconds for a plan asked over HTTP or MCP (the CLI's --timeout is the user's own)
# The planner's time grows with blocks x ranks: about (layers + 2) x (world_size + 128) x 1-3.5 ms per row on a
# loaded 2-core box (benchmarks/bench_plan_queue.py --sizes), whatever dim, ffn or vocab are (fake tensors).  A
# plan asked over HTTP or MCP may ask for at most this much, summed over its rows, so it leaves the plan
# queue within about a minute; the CLI, on the user's own machine, has no such bound.
MAX_SERVED_WORK = 16_384
MAX_GPU_MEMORY_GIB = 4096  # the GPU memory a fit verdict may be asked for, GiB
MAX_TRANSFORMER_TEXT = 200  # characters of the transformer's text form
MAX_RESHARD_TEXT = 10  # characters of reshard_after_forward's text form (an int is read whole)

TransformerText = Annotated[str, Field(min_length=1, max_length=MAX_TRANSFORMER_TEXT)]
ReshardText = Annotated[str, Field(max_length=MAX_RESHARD_TEXT)]
DTypeText = Literal["fp32", "bf16", "fp16", "none"]
Models = tuple[TransformerSpec | None, str | None, str | None]

_SETTING = Setting.model_fields  # the defaults a request's text-form knobs share with a Setting
_FLAGS = {"gpu_memory_gib": "--gpu-memory"}  # fields whose CLI option is not --the-field-name
_EITHER_FORM: dict[str, Any] = {"type": ["object", "string"]}  # the union's types at the top, for function calls
_TRANSFORMER = (
    "Sizes of the built-in Llama-style decoder: the CLI's text 'layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,"
    "vocab=128256' or an object with layers, dim, heads, kv_heads, ffn and vocab (a report's transformer)"
)


def flag(field: str) -> str:
    """The ``fsdp-skill plan`` option that sets request field ``field``: ``world_size`` -> ``--world-size``,
    ``gpu_memory_gib`` -> ``--gpu-memory`` (which takes a size with its unit)."""
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


class PlanKnobs(RunKnobs):
    """The knobs of a plan every door takes (strict; see the module docstring).  Not a request by itself: a
    request adds its model (:class:`PlanRequest`, :class:`LocalPlanRequest`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    world_size: int = Field(8, ge=1, le=MAX_WORLD_SIZE, description="Ranks of a 1-D mesh (not with mesh)")
    mesh: str = Field(
        "",
        max_length=20,
        description="HSDP mesh 'RxS' (R replicas of S-way shards), e.g. '2x8'; empty: the 1-D mesh of world_size",
    )
    param_dtype: DTypeText = Field(
        _SETTING["param_dtype"].default, description="MixedPrecisionPolicy.param_dtype (none: no mixed precision)"
    )
    reduce_dtype: DTypeText = Field(
        _SETTING["reduce_dtype"].default, description="MixedPrecisionPolicy.reduce_dtype (none: the parameter's own dtype)"
    )
    reshard_after_forward: bool | int | ReshardText = Field(
        _SETTING["reshard_after_forward"].default,
        json_schema_extra={"type": ["boolean", "integer", "string"]},  # the union's types at the top, for function calls
        description="fully_shard's reshard_after_forward for the blocks: true, false or an int shard size after forward "
        "(as a report's setting holds it), or those as text ('true', 'false', '2')",
    )
    gpu_memory_gib: float = Field(
        0, ge=0, le=MAX_GPU_MEMORY_GIB, description="GPU memory in GiB for a fit verdict per row; 0: no verdict"
    )
    sweep: list[str] = Field(
        default_factory=list,
        max_length=MAX_SWEEP_AXES,
        description="One row per value, as the CLI's --sweep: e.g. ['world-size=8,16,32,64', 'ac=none,per-block'] "
        f"(every combination, at most {MAX_SWEEP_ROWS} rows); keys {', '.join(SWEEP_KEYS)}",
    )

    def settings(self) -> list[Setting]:
        """The validated settings to plan, one per sweep combination (one without a sweep).  Raises
        InvalidArgument: world_size given with mesh, a bad mesh or reshard text, a bad sweep, a setting over
        the limits."""
        if self.mesh and "world_size" in self.model_fields_set:
            raise InvalidArgument("give world_size or mesh, not both (--world-size N or --mesh RxS)")
        base: dict[str, Any] = {
            **self.model_dump(include=set(RunKnobs.model_fields)),
            "mesh": parse_mesh(self.mesh) if self.mesh else [self.world_size],
            "param_dtype": None if self.param_dtype == "none" else self.param_dtype,
            "reduce_dtype": None if self.reduce_dtype == "none" else self.reduce_dtype,
            "reshard_after_forward": parse_reshard(str(self.reshard_after_forward)),
        }
        return settings_for(base, self.sweep)

    @abstractmethod
    def models(self) -> Models:
        """(the built-in transformer, checked | None, the factory reference | None, the input factory | None):
        exactly one of the first two.  Raises InvalidArgument."""

    def gpu_bytes(self) -> int | None:
        """The GPU memory for the fit verdicts in bytes, or None (no verdict)."""
        return int(self.gpu_memory_gib * 2**30) if self.gpu_memory_gib else None

    def timeout_s(self) -> float:
        """Seconds the whole plan may take."""
        return SERVED_TIMEOUT_S

    def command_line(self) -> str:
        """The ready ``fsdp-skill plan ...`` line for the first setting (see :func:`command_line`); raises
        InvalidArgument as :meth:`settings` and :meth:`models` do."""
        transformer, factory, input_factory = self.models()
        return command_line(
            self.settings()[0],
            transformer=transformer,
            factory=factory,
            input_factory=input_factory,
            gpu_memory=self.gpu_bytes(),
        )


class PlanRequest(PlanKnobs):
    """A plan of the built-in transformer: the body of ``POST /v1/plan`` and the MCP tool ``plan_memory``'s
    arguments.  It cannot name code (no factory field; unknown fields are refused)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "transformer": "layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256",
                    "world_size": 8,
                    "seq": 4096,
                    "gpu_memory_gib": 80,
                    "sweep": ["ac=none,per-block"],
                }
            ]
        }
    )

    transformer: TransformerSpec | TransformerText = Field(description=_TRANSFORMER, json_schema_extra=_EITHER_FORM)

    def models(self) -> Models:
        """(the transformer, parsed and checked, None, None); raises InvalidArgument with the numbers."""
        return _transformer(self.transformer), None, None

    def settings(self) -> list[Setting]:
        """As :meth:`PlanKnobs.settings`, and within the served size bound: :func:`served_work` of the rows is at
        most :data:`MAX_SERVED_WORK` (InvalidArgument with the numbers and the CLI line that plans it locally)."""
        settings = super().settings()
        transformer = _transformer(self.transformer)
        work = served_work(transformer, settings)
        if work > MAX_SERVED_WORK:
            ranks = "+".join(str(s.world_size) for s in settings[:4]) + ("+..." if len(settings) > 4 else "")
            line = command_line(settings[0], transformer=transformer, gpu_memory=self.gpu_bytes())
            raise InvalidArgument(
                f"plan too large to serve: (layers({transformer.layers}) + 2) x (world_size({ranks}) + 128 per row) "
                f"= {work:,} > {MAX_SERVED_WORK:,} (the planner's time grows with blocks x ranks); ask for fewer "
                f"ranks, layers or sweep rows, or plan it on your own machine: {line}"
            )
        return settings


class LocalPlanRequest(PlanKnobs):
    """``fsdp-skill plan``'s request: the built-in transformer or the user's own factory (run in the planner's
    child process), and the plan's timeout.  Never taken over HTTP or MCP."""

    transformer: TransformerSpec | TransformerText | None = Field(None, description=_TRANSFORMER, json_schema_extra=_EITHER_FORM)
    model: str | None = Field(
        None,
        min_length=1,
        description="Your factory returning an nn.Module (path.py:fn or pkg.module:fn), called with no arguments "
        "under FakeTensorMode in the planner's child process",
    )
    input: str | None = Field(
        None,
        min_length=1,
        description="With model: a factory returning the step's input (a tensor, a tuple of positional arguments "
        "or a dict of keyword arguments); default int64 tokens of batch x seq",
    )
    timeout: float = Field(
        DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S, description=f"Seconds for the whole plan (at most {MAX_TIMEOUT_S:g}: a day)"
    )

    def settings(self) -> list[Setting]:
        """As :meth:`PlanKnobs.settings`, after the model checks of :meth:`models` (they come first)."""
        self._check_models()
        return super().settings()

    def models(self) -> Models:
        """(the transformer, parsed and checked, or None; the factory or None; the input factory or None).
        Raises InvalidArgument: no model or two, ``input`` without ``model``, a bad transformer."""
        self._check_models()
        return (_transformer(self.transformer) if self.transformer is not None else None), self.model, self.input

    def timeout_s(self) -> float:
        """Seconds the whole plan may take: ``timeout``."""
        return self.timeout

    def command_line(self) -> str:
        """As :meth:`PlanKnobs.command_line`, with ``--timeout`` when it is not the default."""
        line = super().command_line()
        return line if self.timeout == DEFAULT_TIMEOUT_S else f"{line} {flag('timeout')} {_number(self.timeout)}"

    def _check_models(self) -> None:
        if (self.transformer is None) == (self.model is None):
            raise InvalidArgument("give exactly one model: --transformer SPEC or --model FILE.py:FUNCTION")
        if self.input and not self.model:
            raise InvalidArgument("--input goes with --model (the built-in transformer takes --batch and --seq)")


def command_line(
    setting: Setting,
    *,
    transformer: TransformerSpec | None = None,
    factory: str | None = None,
    input_factory: str | None = None,
    gpu_memory: int | None = None,
) -> str:
    """An ``fsdp-skill plan`` command line for ``setting`` of this model (a ready command for answers and
    reports); ``gpu_memory`` in bytes, written as the shortest size that reads back exactly (``80GiB``, ``80GB``)."""
    parts = ["fsdp-skill", "plan"]
    parts += [flag("transformer"), transformer.text()] if transformer else [flag("model"), factory or ""]
    parts += [flag("input"), input_factory] if input_factory else []
    if len(setting.mesh) == 2:
        parts += [flag("mesh"), "x".join(map(str, setting.mesh))]
    else:
        parts += [flag("world_size"), str(setting.world_size)]
    parts += [
        flag("batch"),
        str(setting.batch),
        flag("seq"),
        str(setting.seq),
        flag("param_dtype"),
        setting.param_dtype or "none",
        flag("reduce_dtype"),
        setting.reduce_dtype or "none",
        flag("optimizer"),
        setting.optimizer,
        flag("activation_checkpointing"),
        setting.activation_checkpointing,
        flag("reshard_after_forward"),
        str(setting.reshard_after_forward).lower(),
    ]
    parts += [flag("cpu_offload")] if setting.cpu_offload else []
    parts += [flag("embedding_groups")] if setting.embedding_groups else []
    parts += [flag("gpu_memory_gib"), format_size(gpu_memory)] if gpu_memory else []
    return shlex.join(parts)


def served_work(transformer: TransformerSpec, settings: list[Setting]) -> int:
    """The size of a plan as the served bound counts it: the sum over its rows of (layers + 2) x (world_size + 128)
    (blocks plus embedding and output, times ranks plus what a block costs at any world size)."""
    return sum((transformer.layers + 2) * (s.world_size + 128) for s in settings)


def _transformer(value: TransformerSpec | str) -> TransformerSpec:
    return parse_transformer(value) if isinstance(value, str) else value.check()


def _number(x: float) -> str:
    """``x`` as short text that reads back as exactly ``x``: 600, 0.5, 123456.789."""
    text = f"{x:g}"
    return text if float(text) == x else repr(x)
