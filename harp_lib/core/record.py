"""The machinery every typed record is built on: :class:`SchemaError` and the :class:`Record` mixin.

``Record`` gives a frozen dataclass a strict ``from_dict`` (an unknown or missing field, or a value
of the wrong type, raises :class:`SchemaError` naming the field) and a JSON-ready ``to_dict``, by
the generic (de)serialisation below.  The records themselves are in :mod:`harp_lib.core.schema`,
their JSONL files in :mod:`harp_lib.core.jsonl`.

>>> SchemaError("expected a number, got 'x'", path="q.jsonl", line=3, field="start").args[0]
"q.jsonl: line 3: field 'start': expected a number, got 'x'"
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import types
import typing
from typing import Any, ClassVar, Optional, TypeVar, Union
from harp_lib.core.errors import HarpError

__all__ = ["SchemaError", "Record"]


class SchemaError(HarpError, ValueError):
    """A record does not match its schema.  Names the file, line and field when known."""

    def __init__(self, message: str, *, path: str | os.PathLike | None = None,
                 line: int | None = None, field: str | None = None):
        self.path, self.line, self.field = (str(path) if path else None), line, field
        where = []
        if path:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field '{field}'")
        super().__init__(f"{': '.join(where)}: {message}" if where else message)

    def at(self, path=None, line=None) -> "SchemaError":
        """The same error with a file and line attached (keeps the field)."""
        msg = self.args[0]
        # strip an existing location prefix so it is not repeated
        if self.field and f"field '{self.field}': " in msg:
            msg = msg.split(f"field '{self.field}': ", 1)[1]
        return SchemaError(msg, path=path or self.path,
                           line=line if line is not None else self.line, field=self.field)


# ---------------------------------------------------------------------------------------
# Generic (de)serialisation of frozen dataclasses
# ---------------------------------------------------------------------------------------
T = TypeVar("T", bound="Record")


def _is_optional(tp) -> tuple[bool, Any]:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return True, args[0]
    return False, tp


def _decode(value: Any, tp: Any, fname: str) -> Any:
    """Turn a JSON value into ``tp`` (dataclasses, tuples, optionals, primitives): null where the
    type allows it, else the decoder of the type's family (:func:`_decoder_for`)."""
    optional, tp = _is_optional(tp)
    if value is None:
        if optional or tp is Any:
            return None
        raise SchemaError("is null but a value is required", field=fname)
    return _decoder_for(tp)(value, tp, fname)


def _decode_record(value: Any, tp: Any, fname: str) -> Any:
    """A nested record: a JSON object, its errors named ``outer.inner``."""
    if not isinstance(value, dict):
        raise SchemaError(f"expected an object, got {type(value).__name__}", field=fname)
    try:
        return tp.from_dict(value)
    except SchemaError as e:
        raise SchemaError(e.args[0].split(": ", 1)[-1] if e.field else e.args[0],
                          field=f"{fname}.{e.field}" if e.field else fname) from None


def _decode_tuple(value: Any, tp: Any, fname: str) -> tuple:
    """``tuple[X, ...]``: a JSON list, each element decoded as ``X`` (named ``field[i]``)."""
    args = typing.get_args(tp)
    if not isinstance(value, (list, tuple)):
        raise SchemaError(f"expected a list, got {type(value).__name__}", field=fname)
    elt = args[0] if args else Any
    return tuple(_decode(v, elt, f"{fname}[{i}]") for i, v in enumerate(value))


def _decode_object(value: Any, tp: Any, fname: str) -> dict:
    """``dict``: a JSON object, copied (its values are not checked)."""
    if not isinstance(value, dict):
        raise SchemaError(f"expected an object, got {type(value).__name__}", field=fname)
    return dict(value)


def _decode_float(value: Any, tp: Any, fname: str) -> float:
    """A finite number (an integer is widened; true/false is not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"expected a number, got {value!r}", field=fname)
    try:
        out = float(value)
    except OverflowError:
        raise SchemaError("number too large", field=fname) from None
    if not math.isfinite(out):   # JSON NaN/Infinity tokens: never written by harp_lib
        raise SchemaError(f"expected a finite number, got {value!r}", field=fname)
    return out


def _decode_int(value: Any, tp: Any, fname: str) -> int:
    """An integer (a float with no fraction is narrowed; true/false is not an integer)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise SchemaError(f"expected an integer, got {value!r}", field=fname)
    return value


def _decode_bool(value: Any, tp: Any, fname: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(f"expected true/false, got {value!r}", field=fname)
    return value


def _decode_str(value: Any, tp: Any, fname: str) -> str:
    if not isinstance(value, str):
        raise SchemaError(f"expected a string, got {value!r}", field=fname)
    return value


def _decode_as_is(value: Any, tp: Any, fname: str) -> Any:
    """Any other type (``Any``, ``list``, ...): the JSON value unchanged."""
    return value


#: The primitive types' decoders (matched by identity, as the type hints name them).
_SCALAR_DECODERS = ((float, _decode_float), (int, _decode_int), (bool, _decode_bool), (str, _decode_str))


def _decoder_for(tp: Any):
    """The decoder of ``tp``'s family: records, tuples, objects, the primitives, anything else as is."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _decode_record
    origin = typing.get_origin(tp)
    if origin is tuple:
        return _decode_tuple
    if origin is dict or tp is dict:
        return _decode_object
    return next((dec for t, dec in _SCALAR_DECODERS if tp is t), _decode_as_is)


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        raise SchemaError(f"non-finite number {value!r} cannot be written to JSON")
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _encode(value.item())
    return value


class Record:
    """Mixin giving frozen dataclasses strict ``from_dict`` and ``to_dict``."""

    _hints_cache: ClassVar[dict] = {}
    #: the field that must be unique within one manifest file (checked by :func:`~harp_lib.core.jsonl.iter_jsonl`)
    unique_field: ClassVar[Optional[str]] = None

    @classmethod
    def _hints(cls) -> dict[str, Any]:
        key = cls
        if key not in Record._hints_cache:
            Record._hints_cache[key] = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        return Record._hints_cache[key]

    @classmethod
    def from_dict(cls: type[T], data: dict) -> T:
        """Build a record from a dict; unknown or missing fields raise :class:`SchemaError`."""
        if not isinstance(data, dict):
            raise SchemaError(f"expected a JSON object for {cls.__name__}, got {type(data).__name__}")
        hints = cls._hints()
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise SchemaError(f"unknown field for {cls.__name__} (known: {', '.join(fields)})",
                              field=unknown[0])
        kwargs = {}
        for name, f in fields.items():
            if name not in data:
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                    raise SchemaError(f"missing required field of {cls.__name__}", field=name)
                continue
            kwargs[name] = _decode(data[name], hints[name], name)
        try:
            return cls(**kwargs)
        except SchemaError:
            raise
        except (TypeError, ValueError) as e:
            raise SchemaError(f"invalid {cls.__name__}: {e}") from None

    def to_dict(self) -> dict:
        """A JSON-ready dict (tuples become lists)."""
        return {f.name: _encode(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def replace(self: T, **changes) -> T:
        """A copy with some fields changed (records are never mutated)."""
        return dataclasses.replace(self, **changes)
