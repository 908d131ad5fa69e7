"""What to plan: the built-in transformer's sizes and one run's :class:`Setting`, parsed from their text forms
and validated with the numbers in the message (InvalidArgument, exit 2 / HTTP 400).

The limits of a plan live here, once: :data:`MAX_WORLD_SIZE`, :data:`MAX_BATCH`, :data:`MAX_SEQ`, the sweep's
:data:`MAX_SWEEP_ROWS` and :data:`MAX_SWEEP_AXES`.  :class:`RunKnobs` holds the knobs a setting and a plan request
(:mod:`.request`) take in the same form, so their type, default, limit and description are written once.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fsdp_skill.errors import InvalidArgument

MAX_WORLD_SIZE = 65536  # ranks one plan may simulate (the fake process group allocates nothing per rank)
MAX_BATCH = 1_000_000  # micro-batch per rank (fake tensors: a size costs nothing but its numbers)
MAX_SEQ = 10_000_000  # tokens per sample
MAX_SWEEP_ROWS = 16  # settings one plan measures (each takes seconds of a CPU core)
MAX_SWEEP_AXES = 4  # --sweep items (KEY=V1,V2,...); four two-value axes already make 16 rows
DType = Literal["fp32", "bf16", "fp16"]
DTYPE_NAMES: tuple[str, ...] = get_args(DType)
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


class TransformerSpec(BaseModel):
    """Sizes of the built-in Llama-style decoder-only transformer (strict: "2" or true is not a size)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    layers: int = Field(ge=1, le=1024, description="Number of decoder blocks")
    dim: int = Field(ge=1, le=65536, description="Hidden size (model dimension)")
    heads: int = Field(ge=1, le=1024, description="Attention heads (dim must be a multiple of heads)")
    kv_heads: int = Field(ge=1, le=1024, description="Key/value heads for grouped-query attention (divides heads)")
    ffn: int = Field(ge=1, le=1_000_000, description="Hidden size of the SwiGLU MLP")
    vocab: int = Field(ge=2, le=10_000_000, description="Vocabulary size (embedding and untied output layer)")

    def check(self) -> TransformerSpec:
        """Self, after the cross-field checks; raises InvalidArgument with the numbers."""
        if self.dim % self.heads:
            raise InvalidArgument(f"transformer dim({self.dim}) is not a multiple of heads({self.heads})")
        if self.heads % self.kv_heads:
            raise InvalidArgument(f"transformer heads({self.heads}) is not a multiple of kv_heads({self.kv_heads})")
        if (self.dim // self.heads) % 2:
            raise InvalidArgument(
                f"transformer head size dim/heads = {self.dim // self.heads} must be even (rotary "
                "embedding rotates pairs of features)"
            )
        return self

    def text(self) -> str:
        """The spec as the CLI takes it: ``layers=32,dim=4096,...``."""
        return ",".join(f"{k}={v}" for k, v in self.model_dump().items())


# activation checkpointing: none, per-block, selective-op or selective-N (N >= 1, at most 4 digits)
AC_PATTERN = r"^(none|per-block|selective-op|selective-[1-9][0-9]{0,3})$"


def parse_ac(text: str) -> str:
    """``none`` / ``per-block`` / ``selective-op`` / ``selective-N`` (also ``full`` for per-block, ``op`` and ``N``
    as torchtitan's ``selective_ac_option`` writes them) -> the setting's form; raises InvalidArgument."""
    value = text.strip().lower()
    value = {"full": "per-block", "op": "selective-op"}.get(value, value)
    if value.isdigit():
        value = f"selective-{value}"
    if not re.fullmatch(AC_PATTERN, value):
        raise InvalidArgument(
            f"activation checkpointing {text!r} is not none, per-block, selective-op or selective-N (N a positive integer)"
        )
    return value


class RunKnobs(BaseModel):
    """The knobs of one run that a :class:`Setting` and a plan request hold in the same form (their type, default,
    limit and description, written once); both subclasses add the knobs whose forms differ."""

    batch: int = Field(1, ge=1, le=MAX_BATCH, description="Micro-batch size per rank")
    seq: int = Field(2048, ge=2, le=MAX_SEQ, description="Sequence length (tokens per sample)")
    optimizer: Literal["adamw", "adam", "sgd"] = Field(
        "adamw", description="adamw/adam: two fp32 states per parameter; sgd: momentum 0.9, one"
    )
    activation_checkpointing: str = Field(
        "none",
        pattern=AC_PATTERN,
        description="none; per-block (every block recomputed in backward); selective-N (every N-th block, counted "
        "from 1 as torchtitan's layer-level selective AC counts: blocks N, 2N, ...); selective-op (every block, "
        "keeping the outputs of its matmuls and attention kernel but every second matmul's, and recomputing the "
        "rest: torchtitan's op-level selective AC policy)",
    )
    cpu_offload: bool = Field(
        False, description="CPUOffloadPolicy: sharded parameters, gradients and optimizer state in host memory"
    )
    embedding_groups: bool = Field(
        False,
        description="Built-in transformer: fully_shard the token embedding, and the final norm with the output "
        "projection, as groups of their own (the embedding resharded after forward as the blocks are, the "
        "norm + output group not: torchtitan's wrapping), not as part of the root's",
    )

    @field_validator("activation_checkpointing", mode="before")
    @classmethod
    def _ac_forms(cls, value: Any) -> Any:
        """torchtitan's spellings too (``full``, ``op``, ``2``); a value of no form is the field's validation error."""
        if not isinstance(value, str):
            return value
        try:
            return parse_ac(value)
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None


class Setting(RunKnobs):
    """One run to plan: mesh, FSDP2 options, optimizer and input size (the knobs of :class:`RunKnobs` too)."""

    model_config = ConfigDict(extra="forbid")

    mesh: list[int] = Field(description="Device mesh shape: [world_size] (FSDP) or [replicate, shard] (HSDP)")
    reshard_after_forward: bool | int = Field(
        True, description="fully_shard's reshard_after_forward for the blocks: true, false, or an int shard size after forward"
    )
    param_dtype: DType | None = Field("bf16", description="MixedPrecisionPolicy.param_dtype (None: no mixed precision)")
    reduce_dtype: DType | None = Field("fp32", description="MixedPrecisionPolicy.reduce_dtype")
    rank: int = Field(0, ge=0, description="The rank the plan acts as")

    @property
    def world_size(self) -> int:
        """Ranks in the mesh (the product of its shape)."""
        n = 1
        for d in self.mesh:
            n *= d
        return n

    def check(self) -> Setting:
        """Self, after the cross-field checks; raises InvalidArgument with the numbers."""
        if not 1 <= len(self.mesh) <= 2 or any(d < 1 for d in self.mesh):
            raise InvalidArgument(f"mesh {self.mesh} must be [world_size] or [replicate, shard], each >= 1")
        if self.world_size > MAX_WORLD_SIZE:
            raise InvalidArgument(f"world_size({self.world_size}) is over {MAX_WORLD_SIZE}")
        if self.rank >= self.world_size:
            raise InvalidArgument(f"rank({self.rank}) >= world_size({self.world_size})")
        shard = self.mesh[-1]
        r = self.reshard_after_forward
        if not isinstance(r, bool) and (r < 1 or shard % r):
            raise InvalidArgument(f"reshard_after_forward({r}) must be a positive divisor of the shard size({shard})")
        return self

    def label(self, custom_input: bool = False) -> str:
        """A short description for a table row, e.g. ``ws=64 b1xs2048 bf16/fp32 adamw ac=none reshard=true``.

        The dtypes read param/reduce; ``no-mp`` is no mixed precision (the model's own dtypes), and ``orig``
        a dtype left at the parameter's own.  ``custom_input``: the input came from an input factory, so
        batch and seq do not apply."""
        mesh = "x".join(map(str, self.mesh))
        if self.param_dtype is None and self.reduce_dtype is None:
            dtypes = "no-mp"
        else:
            dtypes = f"{self.param_dtype or 'orig'}/{self.reduce_dtype or self.param_dtype or 'orig'}"
        parts = [
            f"mesh={mesh}" if len(self.mesh) == 2 else f"ws={mesh}",
            "input=factory" if custom_input else f"b{self.batch}xs{self.seq}",
            dtypes,
            self.optimizer,
        ]
        parts += [f"ac={self.activation_checkpointing}", f"reshard={str(self.reshard_after_forward).lower()}"]
        return " ".join(parts + (["cpu-offload"] if self.cpu_offload else []) + (["emb-groups"] if self.embedding_groups else []))


def parse_bytes(text: str) -> int:
    """``80GiB`` / ``80GB`` / ``1.5TiB`` / ``4096B`` -> bytes; a bare number is refused (``80`` meant as GiB would
    be 80 bytes); raises InvalidArgument."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", text or "")
    if not m or not m.group(2) or m.group(2).lower() not in _UNITS:
        raise InvalidArgument(f"memory size {text!r} is not a number with a unit such as 80GiB, 80GB or 24576MiB")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise InvalidArgument(f"memory size {text!r} must be > 0")
    return value


def format_size(n: int) -> str:
    """``n`` bytes as a short text :func:`parse_bytes` reads back as exactly ``n``, in the first unit that has
    one: ``80GiB``, ``80GB``, ``1.024MiB`` (1073741 bytes), else ``1234B``.  ``n`` must be > 0."""
    for unit in ("GiB", "GB", "TiB", "TB", "MiB", "MB", "KiB", "kB"):
        text = f"{n / _UNITS[unit.lower()]:g}{unit}"
        try:
            if "e" not in text and parse_bytes(text) == n:
                return text
        except InvalidArgument:  # rounds to 0 bytes in this unit
            continue
    return f"{n}B"


def parse_transformer(text: str) -> TransformerSpec:
    """``layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256`` -> TransformerSpec (all six keys)."""
    fields: dict[str, int] = {}
    for part in (text or "").split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or not value.strip().isdigit():
            raise InvalidArgument(
                f"--transformer part {part.strip()!r} is not KEY=INTEGER "
                "(e.g. layers=32,dim=4096,heads=32,kv_heads=8,ffn=14336,vocab=128256)"
            )
        name = key.strip().replace("-", "_")
        if name in fields:
            raise InvalidArgument(f"--transformer gives {name} twice ({fields[name]} and {int(value)})")
        fields[name] = int(value)
    missing = [k for k in TransformerSpec.model_fields if k not in fields]
    unknown = [k for k in fields if k not in TransformerSpec.model_fields]
    if missing or unknown:
        raise InvalidArgument(
            f"--transformer needs exactly layers, dim, heads, kv_heads, ffn, vocab"
            f"{'; missing ' + ', '.join(missing) if missing else ''}"
            f"{'; unknown ' + ', '.join(unknown) if unknown else ''}"
        )
    try:
        return TransformerSpec(**fields).check()
    except ValueError as exc:
        raise InvalidArgument(f"--transformer: {first_error(exc)}") from None


def parse_mesh(text: str) -> list[int]:
    """``2x8`` -> [2, 8] (HSDP: replicate x shard); ``64`` -> [64]."""
    parts = (text or "").lower().split("x")
    if not 1 <= len(parts) <= 2 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise InvalidArgument(f"mesh {text!r} is not N or RxS with positive integers (e.g. 2x8: 2 replicas of 8-way shards)")
    return [int(p) for p in parts]


def parse_reshard(text: str) -> bool | int:
    """``true`` / ``false`` / an int shard size; raises InvalidArgument."""
    low = str(text).strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low.isdigit() and int(low) >= 1:
        return int(low)
    raise InvalidArgument(f"reshard_after_forward {text!r} is not true, false or a positive integer")


def _dtype(text: str) -> str | None:
    low = text.strip().lower()
    if low in ("none", "no"):
        return None
    if low not in DTYPE_NAMES:
        raise InvalidArgument(f"dtype {text!r} is not one of {', '.join(DTYPE_NAMES)} or none")
    return low


def _flag(text: str) -> bool:
    low = text.strip().lower()
    if low not in ("true", "false"):
        raise InvalidArgument(f"cpu-offload {text!r} is not true or false")
    return low == "true"


def _positive(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise InvalidArgument(f"{text!r} is not a positive integer")
    return int(text)


# --sweep KEY=V1,V2,...: the setting field each key sets, and how a value is read
SWEEP_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "world-size": ("mesh", lambda v: [_positive(v)]),
    "mesh": ("mesh", parse_mesh),
    "ac": ("activation_checkpointing", parse_ac),
    "reshard": ("reshard_after_forward", parse_reshard),
    "dtype": ("param_dtype", _dtype),
    "reduce-dtype": ("reduce_dtype", _dtype),
    "optimizer": ("optimizer", str.strip),
    "batch": ("batch", _positive),
    "seq": ("seq", _positive),
    "cpu-offload": ("cpu_offload", _flag),
    "embedding-groups": ("embedding_groups", _flag),
}


def parse_sweep(items: list[str]) -> list[dict[str, Any]]:
    """``["world-size=8,16", "ac=none,per-block"]`` -> the list of field overrides of every combination
    (the product, in order); raises InvalidArgument for an unknown key or over MAX_SWEEP_ROWS rows."""
    axes: list[list[tuple[str, Any]]] = []
    fields: dict[str, str] = {}
    for item in items:
        key, eq, values = item.partition("=")
        key = key.strip().replace("_", "-")
        if not eq or key not in SWEEP_KEYS or not values.strip():
            raise InvalidArgument(f"--sweep {item!r} is not KEY=V1,V2,... with KEY one of {', '.join(SWEEP_KEYS)}")
        if SWEEP_KEYS[key][0] in fields:
            raise InvalidArgument(
                f"--sweep {key} and --sweep {fields[SWEEP_KEYS[key][0]]} both set {SWEEP_KEYS[key][0]}; sweep one of them"
            )
        fields[SWEEP_KEYS[key][0]] = key
        field, read = SWEEP_KEYS[key]
        axes.append([(field, read(v)) for v in values.split(",") if v.strip()])
    rows = [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]
    if len(rows) > MAX_SWEEP_ROWS:
        raise InvalidArgument(f"--sweep gives {len(rows)} settings; at most {MAX_SWEEP_ROWS}")
    return rows


def settings_for(base: dict[str, Any], sweep: list[str]) -> list[Setting]:
    """The settings of a plan: ``base`` fields with each sweep combination applied; raises InvalidArgument."""
    out = []
    for overrides in parse_sweep(sweep):
        if len(base.get("mesh", ())) == 2 and len(overrides.get("mesh", (0, 0))) == 1:
            raise InvalidArgument(
                f"--sweep world-size would replace the HSDP mesh {'x'.join(map(str, base['mesh']))} "
                "with a 1-D one; sweep mesh=RxS,... instead"
            )
        try:
            out.append(Setting(**{**base, **overrides}).check())
        except ValueError as exc:
            raise InvalidArgument(f"setting {overrides or base}: {first_error(exc)}") from None
    return out


def first_error(exc: Exception, name: Callable[[str], str] | None = None) -> str:
    """One line for a validation error: its first problem as ``field: message`` (``name`` renders the top field,
    e.g. as the CLI flag that sets it; without it the whole location is joined with dots).  Of a union's
    alternatives (``bool | int | str``) the problem is the one that is not a type mismatch, when there is one:
    a 12-character string is 'at most 10 characters', not 'not a valid boolean'."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    errors = exc.errors()
    first = errors[0]
    same_field = [e for e in errors if e["loc"][:1] == first["loc"][:1]]
    e = next((e for e in same_field if not e["type"].endswith("_type")), first)
    loc = [str(p) for p in e["loc"]]
    where = name(loc[0]) if name and loc else ".".join(loc)
    return f"{where}: {e['msg']}".strip(": ")
