"""Typed records shared by every stage, and the vocabulary they are checked against.

Every record is a frozen dataclass with ``to_dict`` / ``from_dict`` (the :class:`~harp_lib.core.record.Record`
mixin).  Reading is strict: an unknown or missing field raises :class:`~harp_lib.core.record.SchemaError`
naming the file, the line and the field, so a typo in a manifest never turns into a silently empty
column; the JSONL files themselves are read and written by :mod:`harp_lib.core.jsonl`.

Ground-truth and extracted segments share :class:`Segment`, so the oracle planner, the
retriever and the hit-rate metrics read either kind.

>>> s = Segment(id="r1_0001", recording_id="r1", start=1.23456, end=4.5, speaker="S1", text="hi")
>>> s.start                      # times are rounded once, here, to the millisecond
1.235
>>> Segment.from_dict(s.to_dict()) == s
True
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Optional

from harp_lib.core.jsonl import check_run_fields
# read_jsonl re-exported for notebooks/ (01_extract, 02_index, 04b_llm_rows, 05_judge,
# fig1_pipeline_walkthrough), which import it from here
from harp_lib.core.jsonl import read_jsonl  # noqa: F401
from harp_lib.core.paths import IdError, check_id, is_id
from harp_lib.core.record import Record, SchemaError
from harp_lib.core.timespan import BoundsError, Span, check_bounds

__all__ = [
    "DOMAINS", "QUERY_TYPES", "QUERY_TYPE_DOMAIN", "QUERY_TYPE_COLUMN", "REFERENCE_ROLES",
    "register_query_type", "unregister_query_type",
    "Recording", "Segment", "Query", "PlanSet", "Plan",
    "EvidenceItem", "EvidenceSet", "Evidence", "Prediction", "Judgement", "Score",
    "round_time", "resolve_under", "read_predictions",
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
    """A record's ``start``/``end``, checked and rounded by :func:`~harp_lib.core.timespan.check_bounds`."""
    try:
        start, end = check_bounds(obj.start, obj.end, what)
    except BoundsError as e:
        raise SchemaError(str(e), field=e.field) from None
    _freeze(obj, "start", start)
    _freeze(obj, "end", end)


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
    def span(self) -> Span:
        """``Span(start, end)``: the segment's interval with its algebra (not a field: ``to_dict`` is unchanged)."""
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

    @property
    def span(self) -> Span:
        """``Span(start, end)`` (not a field)."""
        return Span(self.start, self.end)


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
# A run's predictions, and the paths records name
# ---------------------------------------------------------------------------------------
def read_predictions(path: str | os.PathLike, setup: str, domain: str) -> list:
    """The predictions of ``path``, every row checked to be of ``setup`` and ``domain``
    (:func:`~harp_lib.core.jsonl.check_run_fields`)."""
    return check_run_fields(read_jsonl(path, Prediction), path, setup=setup, domain=domain)


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
