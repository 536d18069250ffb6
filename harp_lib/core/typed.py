"""The one decoder of typed JSON: a JSON (or YAML) value checked against a type hint.

Records (:mod:`harp_lib.core.record`) and params.yaml (:mod:`harp_lib.config.validate`) both read
through :func:`decode_into`; each site turns its :class:`DecodeError` s into its own error
(``SchemaError``, ``ConfigError``) and builds its nested dataclasses itself (``build``).

Types: dataclasses (a JSON object, made by ``build``), ``Optional`` / ``Union`` (the first
alternative that fits), ``list`` / ``tuple`` / ``dict`` / ``Mapping`` (their elements checked),
``Literal``, ``bool`` / ``int`` / ``float`` / ``str`` (``true`` is never a number), ``Any``; another
class by ``isinstance``; any other hint as is.  Dict keys are not checked.

One choice, ``convert``:

* ``convert=True`` (JSON records): the value becomes the declared type -- an integer widens to
  ``float``, a float with no fraction narrows to ``int``, a list becomes a tuple for ``tuple[...]``,
  containers are copied; a number must be finite; an object is a JSON object (``dict``).
* ``convert=False`` (params.yaml): values are only checked and kept as written (an ``int`` given
  for a ``float`` stays an ``int``, so outputs do not change; ``3.0`` is not an integer); an
  object is any ``Mapping``.

>>> decode([1, 2.5], tuple[float, ...])
(1.0, 2.5)
>>> decode({"a": [1, "x"]}, dict[str, list[int]], "cfg")
Traceback (most recent call last):
...
harp_lib.core.typed.DecodeError: cfg.a[1]: expected an integer, got 'x'
>>> decode(3, Optional[float], convert=False)
3
"""
from __future__ import annotations

import collections.abc
import dataclasses
import math
import types
import typing
from typing import Any, Callable, Literal, Mapping, Optional, Union

from harp_lib.core.errors import HarpError

__all__ = ["DecodeError", "decode", "decode_into"]

#: ``build(cls, value, path, problems) -> instance``: how a site makes a dataclass from its object
Build = Callable[[type, Mapping, str, list], Any]

_NONE = type(None)


class DecodeError(HarpError, ValueError):
    """One value that does not fit its type: ``path`` (``plan.sets[0].start``), the ``value``, the
    ``expected`` type there and the ``reason``: ``null``, ``type``, ``too_large``, ``not_finite``,
    ``choice`` (a Literal), ``union`` (no alternative fits; ``inner``: the one alternative's own
    problem for ``Optional[X]``) or ``build`` (reported by a site's ``build``, ``message`` given)."""

    def __init__(self, path: str, value: Any, expected: Any, reason: str, *,
                 message: Optional[str] = None, inner: Optional["DecodeError"] = None):
        self.path, self.value, self.expected, self.reason, self.inner = path, value, expected, reason, inner
        self.message = message if message is not None else _message(reason, expected, value, inner)
        where = inner.cause.path if inner is not None else path
        super().__init__(f"{where}: {self.message}" if where else self.message)

    @property
    def cause(self) -> "DecodeError":
        """The innermost problem (for ``Optional[X]``: the problem of X, possibly deeper in the value)."""
        return self.inner.cause if self.inner is not None else self


def _what(tp: Any) -> str:
    """What a JSON value of ``tp`` is, for the messages (``a number``, ``an object``, ...)."""
    origin = typing.get_origin(tp)
    if (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or _is_object_type(tp, origin):
        return "an object"
    if _is_list_type(tp, origin):
        return "a list"
    if origin is Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(tp)))
    names = {float: "a number", int: "an integer", bool: "true/false", str: "a string", _NONE: "null"}
    return names.get(tp) or getattr(tp, "__name__", str(tp))


def _message(reason: str, tp: Any, value: Any, inner: Optional[DecodeError]) -> str:
    if reason == "null":
        return "is null but a value is required"
    if reason == "too_large":
        return "number too large"
    if reason == "not_finite":
        return f"expected a finite number, got {value!r}"
    if reason == "union" and inner is not None:
        return inner.cause.message
    what = " or ".join(map(_what, typing.get_args(tp))) if reason == "union" else _what(tp)
    if what in ("an object", "a list"):   # a container: name the JSON type given
        return f"expected {what}, got {type(value).__name__}"
    return f"expected {what}, got {value!r}"


def _is_object_type(tp: Any, origin: Any) -> bool:
    return tp in (dict, collections.abc.Mapping) or origin in (dict, collections.abc.Mapping)


def _is_list_type(tp: Any, origin: Any) -> bool:
    return tp in (list, tuple) or origin in (list, tuple)


def decode(value: Any, tp: Any, path: str = "", *, convert: bool = True, build: Optional[Build] = None) -> Any:
    """``value`` as ``tp``; raises the first :class:`DecodeError` (see the module docstring)."""
    problems: list[DecodeError] = []
    out = decode_into(value, tp, path, problems, convert=convert, build=build)
    if problems:
        raise problems[0]
    return out


def decode_into(value: Any, tp: Any, path: str, problems: list, *, convert: bool = True,
                build: Optional[Build] = None) -> Any:
    """``value`` as ``tp``, every problem appended to ``problems`` (the value as given is returned
    for a value that does not fit, None for an object that is not one).  ``build`` makes a
    dataclass from its object; by default each field is decoded from its key (a key that is no
    field, or a field without a default that has no key, is a problem)."""
    return _Decoder(convert, build).run(value, tp, path, problems)


class _Decoder:
    """One decoding: the ``convert`` choice and the site's ``build``, walked over the type hint."""

    def __init__(self, convert: bool, build: Optional[Build]):
        self.convert, self.build = convert, build or self.fields
        self.objects = dict if convert else collections.abc.Mapping

    def run(self, value: Any, tp: Any, path: str, problems: list) -> Any:
        if tp is Any:
            return value
        origin = typing.get_origin(tp)
        if origin in (Union, types.UnionType):
            return self.union(value, tp, path, problems)
        if value is None:
            problems.append(DecodeError(path, value, tp, "null"))
            return None
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            if not isinstance(value, self.objects):
                problems.append(DecodeError(path, value, tp, "type"))
                return None
            return self.build(tp, value, path, problems)
        if origin is Literal:
            if not any(value == a and type(value) is type(a) for a in typing.get_args(tp)):
                problems.append(DecodeError(path, value, tp, "choice"))
            return value
        if _is_list_type(tp, origin):
            return self.sequence(value, tp, origin or tp, path, problems)
        if _is_object_type(tp, origin):
            return self.mapping(value, tp, path, problems)
        scalar = _SCALARS.get(tp)
        if scalar is not None:
            return scalar(self, value, tp, path, problems)
        if isinstance(tp, type) and not isinstance(value, tp):
            problems.append(DecodeError(path, value, tp, "type"))
        return value

    def union(self, value: Any, tp: Any, path: str, problems: list) -> Any:
        args = typing.get_args(tp)
        if value is None and _NONE in args:
            return None
        alternatives = [a for a in args if a is not _NONE]
        last = None
        for a in alternatives:
            trial: list = []
            out = self.run(value, a, path, trial)
            if not trial:
                return out
            last = trial[0]
        problems.append(DecodeError(path, value, tp, "union", inner=last if len(alternatives) == 1 else None))
        return value

    def sequence(self, value: Any, tp: Any, kind: type, path: str, problems: list) -> Any:
        if not isinstance(value, (list, tuple)):
            problems.append(DecodeError(path, value, tp, "type"))
            return value
        args = typing.get_args(tp)
        if kind is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                problems.append(DecodeError(path, value, tp, "build",
                                            message=f"expected a list of {len(args)} values, got {len(value)}"))
                return value
            elts = args
        else:
            elts = [args[0] if args else Any] * len(value)
        out = [self.run(v, t, f"{path}[{i}]", problems) for i, (v, t) in enumerate(zip(value, elts))]
        return kind(out) if self.convert else value

    def mapping(self, value: Any, tp: Any, path: str, problems: list) -> Any:
        if not isinstance(value, self.objects):
            problems.append(DecodeError(path, value, tp, "type"))
            return value
        args = typing.get_args(tp)
        elt = args[1] if len(args) == 2 else Any
        out = {k: self.run(v, elt, f"{path}.{k}" if path else str(k), problems) for k, v in value.items()}
        return out if self.convert else value

    # -- primitives ---------------------------------------------------------------------
    def float_(self, value: Any, tp: Any, path: str, problems: list) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(DecodeError(path, value, tp, "type"))
            return value
        if not self.convert:
            return value
        try:
            out = float(value)
        except OverflowError:
            problems.append(DecodeError(path, value, tp, "too_large"))
            return value
        if not math.isfinite(out):   # JSON NaN/Infinity tokens: never written by harp_lib
            problems.append(DecodeError(path, value, tp, "not_finite"))
        return out

    def int_(self, value: Any, tp: Any, path: str, problems: list) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if self.convert and isinstance(value, float) and value.is_integer():
            return int(value)
        problems.append(DecodeError(path, value, tp, "type"))
        return value

    def exact(self, value: Any, tp: Any, path: str, problems: list) -> Any:
        """``bool`` and ``str``: that type and no other."""
        if not isinstance(value, tp):
            problems.append(DecodeError(path, value, tp, "type"))
        return value

    def fields(self, cls: type, value: Mapping, path: str, problems: list) -> Any:
        """The plain ``build``: each field of ``cls`` from its key; None when there was a problem."""
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
        n = len(problems)
        for k in value:
            if k not in fields:
                problems.append(DecodeError(f"{path}.{k}" if path else str(k), value[k], None, "build",
                                            message=f"unknown key (known: {', '.join(fields)})"))
        kwargs = {}
        for name, f in fields.items():
            where = f"{path}.{name}" if path else name
            if name in value:
                kwargs[name] = self.run(value[name], hints[name], where, problems)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                problems.append(DecodeError(where, None, hints[name], "build", message="missing"))
        return cls(**kwargs) if len(problems) == n else None


_SCALARS = {float: _Decoder.float_, int: _Decoder.int_, bool: _Decoder.exact, str: _Decoder.exact}
