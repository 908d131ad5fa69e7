"""Records: the value types a cached ``ask`` builds, as standard-library dataclasses that import no pydantic.

A record is ``@dataclass(slots=True, kw_only=True, eq=False, repr=False)`` on a subclass of :class:`Record` (whose
``__eq__`` and ``__repr__`` are the ones the decorator would generate, written once: ``tests/test_records.py``), each field followed by its
description as an attribute docstring (a long one as adjacent string literals in parentheses: still one string).  :class:`Record` gives it the part of pydantic's model API the code uses:

- ``model_dump(mode=...)`` and ``model_dump_json(indent=...)`` in pure Python; the JSON is byte for byte what
  pydantic's ``TypeAdapter(T).dump_json(value)`` writes (compact separators, non-ASCII as is, ``1e-6`` and
  ``0.00001`` as pydantic writes floats, ``null`` for an infinite or NaN float);
- ``model_copy(update=...)`` (shallow, unvalidated, as pydantic's);
- ``model_validate`` / ``model_validate_json`` / ``model_json_schema`` through pydantic's ``TypeAdapter``,
  imported on first use: validation and schemas are pydantic's (lax mode, extra keys ignored, as the models
  had), and ``__pydantic_config__`` (``use_attribute_docstrings``, the class docstring as the schema's
  ``description``) makes the schema carry the same descriptions a ``BaseModel`` with ``Field(description=...)``
  had.  FastAPI and the MCP adapter take records through ``TypeAdapter`` too;
- ``from_data`` / ``from_json``: what a reader of the project's own cache files calls.  They accept and refuse
  exactly what ``model_validate`` does, without importing pydantic when the data has exactly the shape a record
  writes (each value of its field's own JSON type, a missing field that has a default); anything else goes
  to ``model_validate`` for pydantic's answer (a coercion, or a ``ValidationError``, a ``ValueError``).

Construction is not validated (a dataclass): the code that builds a record passes values of its field types
(mypy checks them; floats as floats).  The runtime may import this module: it needs the standard library only.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

R = TypeVar("R", bound="Record")


def _describe(schema: dict[str, Any], cls: type) -> None:
    """``json_schema_extra`` of every record: its class docstring is the schema's description, as a BaseModel's
    is (pydantic leaves a standard-library dataclass's docstring out)."""
    doc = cls.__dict__.get("__doc__")
    if doc:
        schema["description"] = inspect.cleandoc(doc)


class Record:
    """Base of the records: pydantic's model API over a slotted, keyword-only standard-library dataclass."""

    __slots__ = ()
    # read by pydantic's TypeAdapter (a plain dict, so defining a record imports no pydantic)
    __pydantic_config__: ClassVar[dict[str, Any]] = {"use_attribute_docstrings": True, "json_schema_extra": _describe}

    # Equality and repr as the dataclass decorator would write them, defined once here: a record is declared with
    # eq=False, repr=False, since compiling those two methods for each record class costs a cached ask ~8 ms.
    def __eq__(self, other: object) -> bool:
        """``(self.f1, self.f2, ...) == (other.f1, other.f2, ...)`` over the fields when ``other`` is of the same
        class, else NotImplemented: what ``@dataclass(eq=True)`` generates."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = _field_names(type(self))
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    __hash__ = None  # type: ignore[assignment]  # mutable records are unhashable, as dataclass(eq=True) makes them

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        """``ClassName(f1=..., f2=...)``: what ``@dataclass(repr=True)`` generates (``...`` for a record inside itself)."""
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in _field_names(type(self)))
        return f"{type(self).__qualname__}({fields})"

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The record as a dict of plain values (nested records as dicts, lists and dicts copied), fields in
        declaration order; ``mode`` is accepted for pydantic's signature (the values are JSON types either way)."""
        plain: dict[str, Any] = _plain(self)  # type: ignore[assignment]  # a record's plain form is a dict
        return plain

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """The record as JSON text, equal to pydantic's ``TypeAdapter(type(self)).dump_json(self, indent=indent)``."""
        parts: list[str] = []
        _encode(_plain(self), parts, " " * indent if indent is not None else None, "\n")
        return "".join(parts)

    def model_copy(self: R, *, update: Mapping[str, Any] | None = None) -> R:
        """A shallow copy with the fields in ``update`` replaced (not validated, as pydantic's model_copy).
        Raises TypeError for a name that is not a field."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]  # every Record is a dataclass

    @classmethod
    def model_validate(cls: type[R], obj: object, *, strict: bool | None = None) -> R:
        """``obj`` (a dict, or an instance) validated by pydantic into this record; raises pydantic's
        ValidationError (a ValueError)."""
        record: R = _adapter(cls).validate_python(obj, strict=strict)
        return record

    @classmethod
    def model_validate_json(cls: type[R], data: str | bytes, *, strict: bool | None = None) -> R:
        """JSON text validated by pydantic into this record; raises pydantic's ValidationError (a ValueError)."""
        record: R = _adapter(cls).validate_json(data, strict=strict)
        return record

    @classmethod
    def model_json_schema(
        cls, *, by_alias: bool = True, mode: Literal["validation", "serialization"] = "validation"
    ) -> dict[str, Any]:
        """The JSON schema pydantic gives this record (field descriptions from the attribute docstrings)."""
        return _adapter(cls).json_schema(by_alias=by_alias, mode=mode)

    @classmethod
    def from_data(cls: type[R], data: object) -> R:
        """The record of JSON-shaped ``data`` (e.g. a parsed cache file): what :meth:`model_validate` returns
        or raises, computed without pydantic when every value already has its field's JSON type."""
        try:
            record: R = _converter(cls)(data)
            return record
        except _Unsure:
            return cls.model_validate(data)

    @classmethod
    def from_json(cls: type[R], text: str | bytes) -> R:
        """The record of JSON text: :meth:`from_data` of ``json.loads(text)``; ValueError when it is not JSON."""
        return cls.from_data(json.loads(text))


_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    """pydantic's TypeAdapter of a record class, built once (imports pydantic)."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


# --------------------------------------------------------------------------- plain values and JSON text
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _plain(value: object) -> object:
    """Records as dicts and lists / dicts copied, recursively; other values as they are."""
    if isinstance(value, Record):
        return {name: _plain(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def json_float(x: float) -> str:
    """A float as pydantic's JSON writes it: Python's shortest repr, except exponents -5 (``0.00001``, not
    ``1e-05``) and -6 .. -9 (``1e-6``, not ``1e-06``); ``null`` for infinities and NaN."""
    if not math.isfinite(x):
        return "null"
    text = repr(x)
    if "e" not in text:
        return text
    mantissa, exp = text.split("e")
    power = int(exp)
    if power == -5:
        sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def _encode(value: object, out: list[str], indent: str | None, newline: str) -> None:
    """Append the JSON text of a plain value (see :func:`_plain`) to ``out``: compact without ``indent``, else
    one value per line indented by ``indent`` per level (``newline`` carries the current level's indentation)."""
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(json_float(value))
    elif isinstance(value, (list, dict)):
        items = list(value.items()) if isinstance(value, dict) else value
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        if not items:
            out.append(opening + closing)
            return
        inner = newline + indent if indent is not None else ""
        out.append(opening)
        colon = ": " if indent is not None else ":"
        for i, item in enumerate(items):
            out.append(("," if i else "") + inner)
            if isinstance(value, dict):
                key, item = item
                if not isinstance(key, str):
                    raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
                out.append(encode_basestring(key) + colon)
            _encode(item, out, indent, inner)
        out.append((newline if indent is not None else "") + closing)
    else:
        raise TypeError(f"{type(value).__name__} is not a JSON value")


# --------------------------------------------------------------------------- from_data: the exact-shape path
class _Unsure(Exception):
    """The data is not in a record's exact JSON shape: pydantic decides (it may coerce it, or refuse it)."""


Convert = Callable[[Any], Any]
_MISSING = dataclasses.MISSING


def _exact(kind: type) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) is not kind:
            raise _Unsure
        return value

    return convert


def _float(value: Any) -> Any:
    if type(value) is float:
        return value
    if type(value) is int and abs(value) <= 2**53:  # pydantic turns an int into the equal float
        return float(value)
    raise _Unsure


def _bool(value: Any) -> Any:
    if value is True or value is False:
        return value
    raise _Unsure


def _none(value: Any) -> Any:
    if value is not None:
        raise _Unsure
    return value


def _literal(choices: tuple[object, ...]) -> Convert:
    allowed = {(type(c), c) for c in choices}
    kinds = {type(c) for c in choices}  # str, int, bool: hashable, unlike a list or dict in the data

    def convert(value: Any) -> Any:
        if type(value) not in kinds or (type(value), value) not in allowed:
            raise _Unsure
        return value

    return convert


def _union(options: list[Convert]) -> Convert:
    def convert(value: Any) -> Any:
        for option in options:
            try:
                return option(value)
            except _Unsure:
                pass
        raise _Unsure

    return convert


def _list(item: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) is not list:
            raise _Unsure
        return [item(v) for v in value]

    return convert


def _str_list(value: Any) -> Any:
    if type(value) is not list or not all(type(v) is str for v in value):
        raise _Unsure
    return list(value)


def _dict(item: Convert) -> Convert:
    def convert(value: Any) -> Any:
        if type(value) is not dict or not all(type(k) is str for k in value):
            raise _Unsure
        return {k: item(v) for k, v in value.items()}

    return convert


def _at_least(bound: int, inner: Convert) -> Convert:
    def convert(value: Any) -> Any:
        value = inner(value)
        if value < bound:
            raise _Unsure
        return value

    return convert


_SCALARS: dict[object, Convert] = {str: _exact(str), int: _exact(int), float: _float, bool: _bool, type(None): _none}
# field metadata (dataclasses.field(metadata=...)) that pydantic reads as Field arguments; from_data checks these
_CHECKED_METADATA = {"ge"}


def _annotation_converter(annotation: Any) -> Convert:
    """The converter of one annotation of a record (a scalar, a Literal, ``X | None``, ``list[X]``,
    ``dict[str, X]`` or a record); TypeError for any other annotation (the record needs a case here)."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return lambda value: _converter(annotation)(value)  # resolved on use: records may nest in any order
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return _literal(args)
    if origin in (typing.Union, types.UnionType):
        return _union([_annotation_converter(a) for a in args])
    if origin is list and args == (str,):
        return _str_list
    if origin is list and len(args) == 1:
        return _list(_annotation_converter(args[0]))
    if origin is dict and len(args) == 2 and args[0] is str:
        return _dict(_annotation_converter(args[1]))
    raise TypeError(f"Record.from_data has no case for the annotation {annotation!r}")


_CONVERTERS: dict[type, Convert] = {}


def _converter(cls: type[Record]) -> Convert:
    """The exact-shape converter of a record class (built once): a dict with a value of each field's exact JSON
    type (keys it does not know are ignored, a missing key takes the field's default) becomes the record;
    raises _Unsure otherwise."""
    convert = _CONVERTERS.get(cls)
    if convert is None:
        convert = _CONVERTERS[cls] = _build_converter(cls)
    return convert


def _build_converter(cls: type[Record]) -> Convert:
    hints = typing.get_type_hints(cls)
    plan: list[tuple[str, Convert, Any, Any]] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # a Record subclass is a dataclass
        unknown = set(f.metadata) - _CHECKED_METADATA
        if unknown:
            raise TypeError(f"{cls.__name__}.{f.name}: Record.from_data does not check field metadata {sorted(unknown)}")
        convert = _annotation_converter(hints[f.name])
        if "ge" in f.metadata:
            convert = _at_least(f.metadata["ge"], convert)
        plan.append((f.name, convert, f.default, f.default_factory))

    def build(data: Any) -> Any:
        if type(data) is not dict:
            raise _Unsure
        values: dict[str, Any] = {}
        for name, convert, default, factory in plan:
            if name in data:
                values[name] = convert(data[name])
            elif default is _MISSING and factory is _MISSING:
                raise _Unsure  # a required field is missing: pydantic's error names it
        return cls(**values)

    return build
