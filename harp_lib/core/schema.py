"""Typed records shared by every stage, and their JSONL form.

Every record is a frozen dataclass with ``to_dict`` / ``from_dict``.  Reading is strict:
an unknown or missing field raises :class:`SchemaError` naming the file, the line and the
field, so a typo in a manifest never turns into a silently empty column.

Ground-truth and extracted segments share :class:`Segment`, so the oracle planner, the
retriever and the hit-rate metrics read either kind.

>>> s = Segment(id="r1_0001", recording_id="r1", start=1.23456, end=4.5, speaker="S1", text="hi")
>>> s.start                      # times are rounded once, here, to the millisecond
1.235
>>> Segment.from_dict(s.to_dict()) == s
True
"""
from __future__ import annotations

import dataclasses
import gzip
import io
import json
import math
import os
import sys
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Optional, TypeVar, Union

from harp_lib.core.paths import IdError, check_id, is_id

__all__ = [
    "DOMAINS", "QUERY_TYPES", "QUERY_TYPE_DOMAIN", "QUERY_TYPE_COLUMN", "REFERENCE_ROLES",
    "register_query_type", "unregister_query_type",
    "SchemaError", "Record", "Recording", "Segment", "Query", "PlanSet", "Plan",
    "EvidenceItem", "EvidenceSet", "Evidence", "Prediction", "Judgement", "Score",
    "read_jsonl", "iter_jsonl", "write_jsonl", "append_jsonl", "repair_jsonl_tail", "drop_jsonl_rows", "round_time",
    "resolve_under", "check_run_fields", "read_predictions",
]

#: The three domains of the paper (the reference code calls them emotion/health/music).
DOMAINS: tuple[str, ...] = ("emotion", "clinical", "song")

#: The ten query types, in Table II column order.
QUERY_TYPES: tuple[str, ...] = (
    "state", "change", "comparison", "locate", "locate_hard",   # emotion
    "reported", "exhibited",                                    # clinical (Semantic, Acoustic)
    "time", "position", "audio",                                # song
)
QUERY_TYPE_DOMAIN: dict[str, str] = {
    **{t: "emotion" for t in QUERY_TYPES[:5]},
    **{t: "clinical" for t in QUERY_TYPES[5:7]},
    **{t: "song" for t in QUERY_TYPES[7:]},
}
#: Column headers used by the paper's Table II.
QUERY_TYPE_COLUMN: dict[str, str] = {
    "state": "State", "change": "Change", "comparison": "Comp.", "locate": "Locate",
    "locate_hard": "Locate+", "reported": "Semantic", "exhibited": "Acoustic",
    "time": "Time", "position": "Position", "audio": "Audio",
}
_BUILTIN_TYPES = frozenset(QUERY_TYPES)


def register_query_type(name: str, domain: str) -> None:
    """Add a query type to the vocabulary ``Query`` validates against (called by
    :func:`harp_lib.tasks.register`; the ten paper types are built in)."""
    if domain not in DOMAINS:
        raise SchemaError(f"query type {name!r}: unknown domain {domain!r} (expected one of {DOMAINS})",
                          field="domain")
    if QUERY_TYPE_DOMAIN.get(name, domain) != domain:
        raise SchemaError(f"query type {name!r} already belongs to domain {QUERY_TYPE_DOMAIN[name]!r}",
                          field="query_type")
    QUERY_TYPE_DOMAIN[name] = domain


def unregister_query_type(name: str) -> None:
    """Remove a type added by :func:`register_query_type` (the built-in ten stay)."""
    if name not in _BUILTIN_TYPES:
        QUERY_TYPE_DOMAIN.pop(name, None)


#: Reference-clip roles: A = target speaker / first song, B = second speaker / song,
#: E = emotion example.
REFERENCE_ROLES: tuple[str, ...] = ("A", "B", "E")

TIME_DECIMALS = 3


def round_time(t: float) -> float:
    """Round a time in seconds to the millisecond; the one place times are rounded.

    >>> round_time(0.1 + 0.2)
    0.3
    """
    return round(float(t), TIME_DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0


class SchemaError(ValueError):
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
    #: the field that must be unique within one manifest file (checked by :func:`iter_jsonl`)
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


def _freeze(obj, name: str, value) -> None:
    object.__setattr__(obj, name, value)


def _check_id(value, field_name: str) -> None:
    """Ids become file names (``harp_lib.core.paths``): one safe character set, no separators."""
    if not is_id(value):
        try:
            check_id(value, field_name)
        except IdError as e:
            raise SchemaError(str(e), field=field_name) from None


def _check_span(obj, what: str) -> None:
    for n in ("start", "end"):
        v = getattr(obj, n)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SchemaError(f"{n} must be a finite number of seconds, got {v!r}", field=n)
        _freeze(obj, n, round_time(v))
    if obj.start is not None and obj.end is not None:
        if obj.start < 0:
            raise SchemaError(f"{what} starts before 0 s ({obj.start})", field="start")
        if obj.end < obj.start:
            raise SchemaError(f"{what} ends ({obj.end}) before it starts ({obj.start})", field="end")


# ---------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recording(Record):
    """One long recording (podcast episode, consultation, medley).

    ``audio_path`` is relative to the folder of the manifest that lists it.
    """
    unique_field: ClassVar[Optional[str]] = "id"
    id: str
    domain: str
    audio_path: str
    duration: float
    sample_rate: int = 16000
    custom: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.domain not in DOMAINS:
            raise SchemaError(f"unknown domain {self.domain!r} (expected one of {DOMAINS})", field="domain")
        if not self.id:
            raise SchemaError("empty recording id", field="id")
        _check_id(self.id, "id")
        if not (isinstance(self.duration, (int, float)) and math.isfinite(self.duration) and self.duration >= 0):
            raise SchemaError(f"duration must be a non-negative number, got {self.duration!r}", field="duration")
        _freeze(self, "duration", round_time(self.duration))


@dataclass(frozen=True)
class Segment(Record):
    """A time span of a recording with what is known about it.

    Shared by ground truth (``source="gt"``) and extraction (``source="extracted"``).
    ``labels`` holds domain labels with the shared vocabulary (``primary``, ``scores``,
    ``arousal``/``valence``/``dominance``, ``cough_count``, ``tier`` ...); ``embeddings`` maps
    an embedding space name (``text``, ``audio``, ``domain``) to the row of that space's
    per-recording matrix.
    """
    unique_field: ClassVar[Optional[str]] = "id"
    id: str
    recording_id: str
    start: float
    end: float
    speaker: Optional[str] = None
    text: str = ""
    labels: dict = field(default_factory=dict)
    embeddings: dict = field(default_factory=dict)
    source: str = "gt"
    custom: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.id:
            raise SchemaError("empty segment id", field="id")
        _check_id(self.recording_id, "recording_id")
        _check_span(self, f"segment {self.id}")

    @property
    def duration(self) -> float:
        return round_time(self.end - self.start)

    @property
    def span(self):
        from harp_lib.core.timespan import Span
        return Span(self.start, self.end)


@dataclass(frozen=True)
class Query(Record):
    """A benchmark question about one recording.

    ``references`` maps a role (A, B, E) to a clip path relative to the manifest folder.
    ``gt_segment_ids`` lists the ground-truth segments that hold the evidence.
    """
    unique_field: ClassVar[Optional[str]] = "query_id"
    query_id: str
    domain: str
    recording_id: str
    query_type: str
    text: str
    ground_truth: dict
    judge_info: dict = field(default_factory=dict)
    references: dict = field(default_factory=dict)
    gt_segment_ids: tuple[str, ...] = ()
    time_ref: Optional[float] = None
    custom: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.query_id, str) or not self.query_id:
            raise SchemaError("query_id must be a non-empty string", field="query_id")
        _check_id(self.query_id, "query_id")
        _check_id(self.recording_id, "recording_id")
        if self.domain not in DOMAINS:
            raise SchemaError(f"unknown domain {self.domain!r} (expected one of {DOMAINS})", field="domain")
        if self.query_type not in QUERY_TYPE_DOMAIN:
            raise SchemaError(f"unknown query type {self.query_type!r} (expected one of "
                              f"{tuple(QUERY_TYPE_DOMAIN)})",
                              field="query_type")
        if QUERY_TYPE_DOMAIN[self.query_type] != self.domain:
            raise SchemaError(f"query type {self.query_type!r} belongs to domain "
                              f"{QUERY_TYPE_DOMAIN[self.query_type]!r}, not {self.domain!r}", field="query_type")
        bad = sorted(set(self.references) - set(REFERENCE_ROLES))
        if bad:
            raise SchemaError(f"unknown reference role {bad[0]!r} (roles: {REFERENCE_ROLES})", field="references")
        if self.time_ref is not None:
            _freeze(self, "time_ref", round_time(self.time_ref))


@dataclass(frozen=True)
class PlanSet(Record):
    """One evidence set of a plan: a time window plus tool calls.

    ``localize`` is the natural-language window ("around 3 min", "12:30 to 15:00",
    "the 4th song", "full recording"); ``start``/``end`` may carry it numerically.
    ``audio_emb``/``domain_emb`` name a reference role (A, B, E).
    """
    localize: str
    time: bool = False
    keyword: Optional[str] = None
    label: Optional[str] = None
    text_emb: Optional[str] = None
    audio_emb: Optional[str] = None
    domain_emb: Optional[str] = None
    start: Optional[float] = None
    end: Optional[float] = None

    TOOLS: ClassVar[tuple[str, ...]] = ("time", "keyword", "label", "text_emb", "audio_emb", "domain_emb")

    def __post_init__(self):
        _check_span(self, "plan set window")

    def tools_used(self) -> tuple[str, ...]:
        return tuple(t for t in self.TOOLS if getattr(self, t))


@dataclass(frozen=True)
class Plan(Record):
    """A retrieval plan: evidence sets, plus any errors met while parsing or repairing it."""
    sets: tuple[PlanSet, ...] = ()
    oracle: bool = False
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class EvidenceItem(Record):
    """One retrieved segment, with the score each tool gave it (``sources``)."""
    segment_id: str
    start: float
    end: float
    speaker: Optional[str] = None
    text: str = ""
    labels: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        _check_span(self, f"evidence item {self.segment_id}")

    @property
    def score(self) -> float:
        return float(sum(self.sources.values()))


@dataclass(frozen=True)
class EvidenceSet(Record):
    """The merged top-k segments of one plan set, sorted by time.

    ``start``/``end`` is the window searched; ``clip_start``/``clip_end`` the audio attached.
    """
    index: int
    localize: str
    start: float
    end: float
    items: tuple[EvidenceItem, ...] = ()
    clip_start: Optional[float] = None
    clip_end: Optional[float] = None
    error: Optional[str] = None

    def __post_init__(self):
        # windows may run to infinity ("full recording" with unknown duration)
        for n in ("start", "end", "clip_start", "clip_end"):
            v = getattr(self, n)
            if v is not None and math.isfinite(v):
                _freeze(self, n, round_time(v))


@dataclass(frozen=True)
class Evidence(Record):
    """All evidence sets retrieved for a query (segment ids kept for hit rates)."""
    sets: tuple[EvidenceSet, ...] = ()

    def segment_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i.segment_id for s in self.sets for i in s.items))

    def items(self) -> tuple[EvidenceItem, ...]:
        return tuple(i for s in self.sets for i in s.items)


@dataclass(frozen=True)
class Prediction(Record):
    """The agent's output for one query under one setup."""
    query_id: str
    setup: str
    domain: str
    recording_id: str
    query_type: str
    plan: Plan
    evidence: Evidence
    answer: str
    rationale: str = ""
    backends: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    error: Optional[str] = None
    raw_output: str = ""


@dataclass(frozen=True)
class Judgement(Record):
    """One judge's verdicts on one prediction (1 = YES, 0 = NO)."""
    query_id: str
    setup: str
    judge: str
    answer: int
    factual: int
    faithful: int
    rationale: int
    model_id: str = ""
    prompt_hash: str = ""
    reasons: dict = field(default_factory=dict)
    error: Optional[str] = None


@dataclass(frozen=True)
class Score(Record):
    """Per-query numbers that feed the tables."""
    query_id: str
    setup: str
    domain: str
    query_type: str
    judge: str
    answer: float
    rationale: float
    retrieval_hit_rate_id: Optional[float] = None
    retrieval_hit_rate_overlap: Optional[float] = None
    plan_hit_rate: Optional[float] = None


# ---------------------------------------------------------------------------------------
# JSONL io
# ---------------------------------------------------------------------------------------
def _open_text(path: Path, mode: str, gz: bool | None = None):
    if (str(path).endswith(".gz") if gz is None else gz):
        return io.TextIOWrapper(gzip.open(path, mode.replace("t", "") + "b"), encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def iter_jsonl(path: str | os.PathLike, cls: type[T]) -> Iterator[T]:
    """Yield records of type ``cls`` from a JSONL file (``.gz`` allowed), lazily.

    Blank lines are skipped.  Any problem raises :class:`SchemaError` with file and line,
    including a repeated id (``cls.unique_field``: recording ``id``, ``query_id``, segment ``id``).
    """
    path = Path(path)
    key = getattr(cls, "unique_field", None)
    seen: dict[str, int] = {}
    if not path.exists():
        raise SchemaError(f"no such file (expected a JSONL file of {cls.__name__} records)", path=path)
    if path.is_dir():
        raise SchemaError(f"is a directory (expected a JSONL file of {cls.__name__} records)", path=path)
    opener = (lambda: gzip.open(path, "rb")) if str(path).endswith(".gz") else (lambda: open(path, "rb"))
    try:
        with opener() as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise SchemaError(f"not UTF-8 text ({e.reason} at byte {e.start} of the line); "
                                      f"re-save the file as UTF-8", path=path, line=lineno) from None
                if lineno == 1:
                    line = line.removeprefix("\ufeff")          # a UTF-8 byte-order mark
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as e:
                    raise SchemaError(f"not valid JSON ({e.msg} at column {e.colno})",
                                      path=path, line=lineno) from None
                except (ValueError, RecursionError) as e:     # 5000-digit numbers, 10^5 nested lists
                    raise SchemaError(f"not valid JSON ({type(e).__name__}: {str(e)[:120]})",
                                      path=path, line=lineno) from None
                try:
                    rec = cls.from_dict(data)
                except SchemaError as e:
                    raise e.at(path, lineno) from None
                except (TypeError, ValueError, OverflowError, RecursionError) as e:
                    raise SchemaError(f"invalid {cls.__name__} ({type(e).__name__}: {str(e)[:120]})",
                                      path=path, line=lineno) from None
                if key:
                    v = getattr(rec, key)
                    if v in seen:
                        raise SchemaError(f"duplicate {key} {v!r} (first on line {seen[v]}); ids must be "
                                          f"unique within a manifest", path=path, line=lineno, field=key)
                    seen[v] = lineno
                yield rec
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise SchemaError(f"cannot read ({type(e).__name__}: {e})", path=path) from None


def read_jsonl(path: str | os.PathLike, cls: type[T]) -> list[T]:
    """Read every record of type ``cls`` from a JSONL file.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "s.jsonl")
    >>> write_jsonl(p, [Segment("a", "r", 0, 1)])
    >>> [s.id for s in read_jsonl(p, Segment)]
    ['a']
    """
    return list(iter_jsonl(path, cls))


def _dumps(rec) -> str:
    data = rec.to_dict() if isinstance(rec, Record) else _encode(rec)
    return json.dumps(data, ensure_ascii=False, sort_keys=False, allow_nan=False)


def write_jsonl(path: str | os.PathLike, records: Iterable) -> None:
    """Write records atomically (:func:`harp_lib.core.atomic.atomic_write`), so a crash never leaves
    half a file."""
    from harp_lib.core.atomic import atomic_write

    def writer(tmp: Path):
        with _open_text(tmp, "wt", gz=str(path).endswith(".gz")) as fh:
            for rec in records:
                fh.write(_dumps(rec) + "\n")
    atomic_write(path, writer)


def append_jsonl(path: str | os.PathLike, records: Iterable) -> None:
    """Append records, one flushed and fsynced line each (for resumable runs).

    A torn last line left by a crash is repaired (dropped) before appending; a storage fault
    (full disk, size limit, ...) cuts the line it tore and raises
    :class:`harp_lib.core.atomic.StorageError`.
    """
    from harp_lib.core.atomic import IO_ERRNOS, storage_error
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_jsonl_tail(path)
        with open(path, "a", encoding="utf-8") as fh:
            for rec in records:
                fh.write(_dumps(rec) + "\n")
                fh.flush()
            os.fsync(fh.fileno())
    except OSError as e:
        if e.errno in IO_ERRNOS:
            try:
                repair_jsonl_tail(path)
            except OSError:
                pass
            raise storage_error(e, path) from e
        raise


def repair_jsonl_tail(path: str | os.PathLike) -> int:
    """Cut a torn last line (no trailing newline: a write killed midway) off an append-only
    JSONL file; returns the number of bytes dropped (0 when the file is whole or missing).

    Resuming readers call this before :func:`read_jsonl`, so a run killed while writing
    re-does that one record instead of failing on half a line.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> _ = open(p, "w").write('{"a": 1}\\n{"a": ')
    >>> repair_jsonl_tail(p), open(p).read()
    (6, '{"a": 1}\\n')
    """
    path = Path(path)
    if not path.exists() or not path.stat().st_size:
        return 0
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return 0
        size = fh.seek(0, os.SEEK_END)
        # scan back in blocks for the last newline (files can be large)
        pos, keep = size, 0
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            i = fh.read(step).rfind(b"\n")
            if i >= 0:
                keep = pos + i + 1
                break
        fh.truncate(keep)
        return size - keep


def drop_jsonl_rows(path: str | os.PathLike, drop) -> tuple[list[dict], list[dict]]:
    """Remove the rows of a JSONL file for which ``drop(row)`` is true; returns ``(kept, dropped)``
    (rows as dicts).  Resuming runs use it to retry the rows that failed for a passing reason.

    Lines that are not JSON objects are kept as they are (not in ``kept``), for
    :func:`read_jsonl` to report with their line number; the file is rewritten atomically and
    only when something was dropped.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> _ = open(p, "w").write('{"a": 1}\\n{"a": 2}\\nnot json\\n')
    >>> drop_jsonl_rows(p, lambda r: r["a"] == 2), open(p).read()
    (([{'a': 1}], [{'a': 2}]), '{"a": 1}\\nnot json\\n')
    """
    path = Path(path)
    kept: list[dict] = []
    dropped: list[dict] = []
    lines: list[bytes] = []
    if not path.exists():
        return kept, dropped
    with open(path, "rb") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if isinstance(row, dict) and drop(row):
                dropped.append(row)
                continue
            lines.append(line)
            if isinstance(row, dict):
                kept.append(row)
    if dropped:
        from harp_lib.core.atomic import write_bytes
        write_bytes(path, b"".join(lines))
    return kept, dropped


def check_own_jsonl(path: str | os.PathLike, cls: type[T], **want) -> Path:
    """Refuse to write into ``path`` unless it is missing or a regular file of ``cls`` records
    (a torn last line allowed: a killed run), i.e. a file a harp stage wrote.  Guards
    ``--out`` / ``--no-resume`` against device files, symlinks, folders and other people's files.
    ``want`` (e.g. ``setup="A5", domain="clinical"``): every row must have these field values too
    (:func:`check_run_fields`), so another run's file is neither replaced nor extended.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "x.jsonl")
    >>> _ = open(p, "w").write("name: value\\n")
    >>> check_own_jsonl(p, Segment)
    Traceback (most recent call last):
    ...
    harp_lib.core.schema.SchemaError: ...: line 1: not a Segment record (not valid JSON), so not a file written by harp; refusing to write into it (give a new file name)
    """
    import stat
    path = Path(path)
    if not os.path.lexists(path):
        return path
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode):
        kind = ("symbolic link" if stat.S_ISLNK(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode)
                else "device or special file")
        raise SchemaError(f"is a {kind}, not a {cls.__name__} file written by harp; refusing to write "
                          f"into it (give a new file name)", path=path)
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")
    tail = lines[-1]                                   # after the last newline: empty, or a torn record
    first = dataclasses.fields(cls)[0].name
    if tail.strip() and not tail.startswith(f'{{"{first}": '.encode()):
        raise SchemaError(f"line {len(lines)}: not the start of a {cls.__name__} record, so not a file "
                          f"written by harp; refusing to write into it (give a new file name)", path=path)
    for i, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            cls.from_dict(json.loads(line))
        except (ValueError, TypeError, RecursionError) as e:
            why = "not valid JSON" if isinstance(e, json.JSONDecodeError) or not isinstance(e, SchemaError) \
                else str(e)
            raise SchemaError(f"line {i}: not a {cls.__name__} record ({why}), so not a file written by "
                              f"harp; refusing to write into it (give a new file name)", path=path) from None
    if want:                                           # and of this run (setup, domain), not another's
        check_run_fields(_complete_rows(path, cls), path, **want)
    return path


def check_run_fields(records: Iterable, path: str | os.PathLike, what: str = "file", **want) -> list:
    """``records`` (a list), after checking that each one's fields equal ``want`` (e.g.
    ``setup="A5", domain="clinical"``): a prediction file carries its setup and domain in every
    row, so a file written for another run (``harp infer --out`` onto another setup's file) is
    refused by every reader and writer instead of being read or extended as this run's.

    >>> p = Prediction("q1", "A3", "clinical", "r", "emotion_global", Plan(), Evidence(), "x")
    >>> check_run_fields([p], "A5.jsonl", setup="A5", domain="clinical")
    Traceback (most recent call last):
    ...
    harp_lib.core.schema.SchemaError: A5.jsonl: line 1: field 'setup': a row of setup 'A3', expected 'A5': this file holds another run's rows (an --out of another setup or domain?); use the file of that run or a new file name
    """
    out = list(records)
    for i, r in enumerate(out, 1):
        for k, v in want.items():
            got = getattr(r, k)
            if got != v:
                raise SchemaError(f"a row of {k} {got!r}, expected {v!r}: this {what} holds another run's rows "
                                  f"(an --out of another setup or domain?); use the file of that run or a new "
                                  f"file name", path=path, line=i, field=k)
    return out


def read_predictions(path: str | os.PathLike, setup: str, domain: str) -> list:
    """The predictions of ``path``, every row checked to be of ``setup`` and ``domain``
    (:func:`check_run_fields`)."""
    return check_run_fields(read_jsonl(path, Prediction), path, setup=setup, domain=domain)


def _complete_rows(path: Path, cls: type[T]) -> list:
    """The complete (newline-terminated) records of a file :func:`check_own_jsonl` accepted."""
    with open(path, "rb") as fh:
        lines = fh.read().split(b"\n")[:-1]
    return [cls.from_dict(json.loads(ln)) for ln in lines if ln.strip()]


def reset_jsonl(path: str | os.PathLike, cls: type[T]) -> None:
    """Start ``path`` over (``--no-resume``): after :func:`check_own_jsonl`, replace it
    atomically with an empty file -- never an unlink of a path harp did not write."""
    from harp_lib.core.atomic import write_bytes
    path = check_own_jsonl(path, cls)
    if path.exists():
        write_bytes(path, b"")


def resolve_under(root: str | os.PathLike, rel: str) -> Path:
    """Resolve ``rel`` against ``root`` and refuse anything that escapes it or is a URL.

    >>> resolve_under("/data", "a/b.wav").as_posix()
    '/data/a/b.wav'
    >>> resolve_under("/data", "../etc/passwd")
    Traceback (most recent call last):
    ...
    ValueError: path '../etc/passwd' escapes the data root /data
    """
    if not isinstance(rel, str) or not rel:
        raise ValueError(f"expected a relative file path, got {rel!r}")
    if "://" in rel or rel.startswith(("http:", "https:", "s3:", "gs:")):
        raise ValueError(f"expected a local file path, got a URL {rel!r} (offline: download it "
                         f"and give a path under {root})")
    root_p = Path(root).resolve()
    p = (root_p / rel).resolve()
    if p != root_p and root_p not in p.parents:
        raise ValueError(f"path {rel!r} escapes the data root {root}")
    return p
