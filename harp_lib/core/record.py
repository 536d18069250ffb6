"""The machinery every typed record is built on: :class:`SchemaError` and the :class:`Record` mixin.

``Record`` gives a frozen dataclass a strict ``from_dict`` (an unknown or missing field, or a value
of the wrong type, raises :class:`SchemaError` naming the field) and a JSON-ready ``to_dict``, by
the generic (de)serialisation below (values are read by the one typed decoder, :mod:`harp_lib.core.typed`).  The records themselves are in :mod:`harp_lib.core.schema`,
their JSONL files in :mod:`harp_lib.core.jsonl`.

>>> SchemaError("expected a number, got 'x'", path="q.jsonl", line=3, field="start").args[0]
"q.jsonl: line 3: field 'start': expected a number, got 'x'"
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys
import typing
from typing import Any, ClassVar, Optional, TypeVar
from harp_lib.core.errors import HarpError
from harp_lib.core.typed import DecodeError, decode_into

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


def _decode(value: Any, tp: Any, fname: str) -> Any:
    """Turn a JSON value into ``tp`` by the one typed decoder (:mod:`harp_lib.core.typed`,
    ``convert=True``: an integer widens to float, ...); its first problem as a :class:`SchemaError`
    naming the field (``plan.sets[0].keyword``).  Nested records are read by their ``from_dict``."""
    problems: list[DecodeError] = []
    out = decode_into(value, tp, fname, problems, convert=True, build=_nested_record)
    if problems:
        p = problems[0].cause     # for Optional[X]: what is wrong as an X
        raise SchemaError(p.message, field=p.path)
    return out


def _nested_record(cls: Any, value: dict, fname: str, problems: list) -> Any:
    """A nested record: its own ``from_dict``, its errors named ``outer.inner``."""
    try:
        return cls.from_dict(value)
    except SchemaError as e:
        problems.append(DecodeError(f"{fname}.{e.field}" if e.field else fname, value, cls, "build",
                                    message=e.args[0].split(": ", 1)[-1] if e.field else e.args[0]))
        return None


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
