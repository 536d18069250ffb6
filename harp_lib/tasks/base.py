"""The :class:`Task` base class (one subclass per query type) and the typed record helper.

A task holds everything that depends on the query type:

==================  ==========================================================================
``name``            the ``query_type`` string of the benchmark files
``domain``          emotion | clinical | song
``column``, order   the Table II column header and its position (``order``, ascending)
``GroundTruth``     frozen dataclass of ``Query.ground_truth`` (``from_dict``/``to_dict``)
``JudgeInfo``       frozen dataclass of ``Query.judge_info``
``parse_decision``  what an answer's decision text says (emotion, direction, A/B/tie, ...)
``verdict``         the rule judge's answer rule: ``(1 | 0, reason)``
``ground_truth_lines``  the ground-truth summary shown to the LLM judges
``oracle_sets``     the oracle planner's windows (setups A6, A7)
``read``            the rule reading: the question's Intent when its text asks this type
``read_order``      when :func:`~harp_lib.tasks.read_question` asks ``read`` among the domain's types
``rule_answer``     the deterministic answerer's rule: ``(answer, rationale)``
``human_form``      the human-study answer input; ``human_correct`` grades a human choice
``plan_tool_groups``  the planner tools the plan hit rate requires
``questions``       question templates (where the generators share them)
==================  ==========================================================================

Nothing here reads a benchmark label at answer time: ``read`` gets the question's text, domain and
reference roles only, ``rule_answer`` the context and the evidence (the answerer picks the task by
the name ``read`` gave).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Mapping, Optional

from harp_lib.core.answer_format import fmt_range
from harp_lib.understand.direction import dimension
from harp_lib.core.schema import EvidenceItem, PlanSet, Query
from harp_lib.core.timespan import Span
from harp_lib.understand.intent import Intent
from harp_lib.understand.reading import Reading

__all__ = ["TypedRecord", "Task", "window_set", "num", "cite", "pair_means", "dim_value", "aesthetic", "dimension_in",
           "NO_EVIDENCE", "n_items", "no_evidence"]

#: the answer of a rule when the evidence holds nothing to decide on (silence, a tone, no labels):
#: never a default class (issue #28, class 9)
NO_EVIDENCE = "no evidence"


def n_items(sets) -> int:
    """How many evidence items ``sets`` (``[(span, items), ...]``) hold."""
    return sum(len(items) for _, items in sets)


def no_evidence(what: str, sets) -> tuple[str, str]:
    """``(NO_EVIDENCE, rationale)``: nothing retrieved is "no speech found"; else what was missing.

    >>> no_evidence("emotion labels", [])
    ('no evidence', 'No segment was retrieved (no speech found in the searched window); no answer without evidence.')
    """
    n = n_items(sets)
    if not n:
        return NO_EVIDENCE, "No segment was retrieved (no speech found in the searched window); no answer without evidence."
    return NO_EVIDENCE, f"None of the {n} retrieved segments carries {what}; no answer without evidence."


@dataclass(frozen=True, kw_only=True)
class TypedRecord:
    """A frozen view of one JSON object (``ground_truth`` or ``judge_info``) with typed fields.

    ``from_dict(d).to_dict() == d`` exactly, key order included: keys without a field are kept
    in ``extra`` and the original key order in ``keys``.  A field absent from the JSON is None.

    >>> @dataclass(frozen=True, kw_only=True)
    ... class GT(TypedRecord):
    ...     answer: Optional[str] = None
    >>> g = GT.from_dict({"answer": "Yes", "note": [1]})
    >>> g.answer, g.extra, g.to_dict()
    ('Yes', {'note': [1]}, {'answer': 'Yes', 'note': [1]})
    """
    extra: Mapping = field(default_factory=dict, repr=False)
    keys: tuple = field(default=(), repr=False)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name not in ("extra", "keys"))

    @classmethod
    def from_dict(cls, d: Optional[Mapping]) -> "TypedRecord":
        if d is None:
            d = {}
        if not isinstance(d, Mapping):
            raise TypeError(f"{cls.__qualname__}: expected a JSON object, got {type(d).__name__} {d!r}")
        known = set(cls.field_names())
        return cls(**{k: v for k, v in d.items() if k in known},
                   extra={k: v for k, v in d.items() if k not in known}, keys=tuple(d))

    def to_dict(self) -> dict:
        out = {k: (self.extra[k] if k in self.extra else getattr(self, k)) for k in self.keys}
        for name in self.field_names():   # set in code rather than read from JSON
            if name not in out and getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass(frozen=True, kw_only=True)
class AnyRecord(TypedRecord):
    """Untyped fallback: every key in ``extra``."""


def window_set(span: Span, note: str = "") -> PlanSet:
    """An oracle plan set: the numeric window ``span`` (``time: true``)."""
    loc = f"from {span.start:.1f} to {span.end:.1f} seconds" + (f" ({note})" if note else "")
    return PlanSet(localize=loc, time=True, start=span.start, end=span.end)


class Task:
    """One query type (subclass it and :func:`harp_lib.tasks.register` the subclass)."""
    name: ClassVar[str] = ""
    domain: ClassVar[str] = ""
    column: ClassVar[str] = ""
    order: ClassVar[float] = 1000.0
    #: a benchmark query type (Table II column, ground truth, judges); False: a question kind about
    #: a user's own recording (:class:`harp_lib.tasks.recording.QuestionKind`)
    benchmark: ClassVar[bool] = True
    GroundTruth: ClassVar[type] = AnyRecord
    JudgeInfo: ClassVar[type] = AnyRecord
    #: human-study answer input: (kind, [(value, label), ...]); kind: multi | choice | time
    human_form: ClassVar[tuple] = ("choice", [])
    #: the LLM judges' answer rule when ``prompts/rules.txt`` has no section for this type
    judge_rules: ClassVar[str] = ""
    #: required planner tool groups (paper §5.3): a group is hit when any of its tools is set in
    #: any plan set; none: plan hit rate = time coverage
    plan_tool_groups: ClassVar[tuple[tuple[str, ...], ...]] = ()
    #: question templates (``str.format`` fields), where generators share them
    questions: ClassVar[Mapping[str, str]] = {}
    #: when :func:`~harp_lib.tasks.read_question` asks this task's :meth:`read`, among the tasks of
    #: its domain (lowest first; the first Intent wins)
    read_order: ClassVar[int] = 1000

    # ------------------------------------------------------------- reading the question
    @classmethod
    def read(cls, reading: Reading) -> Optional[Intent]:
        """The question's Intent (``reading.intent(cls.name, why)``) when its text asks this task,
        else None: the next task of the domain is asked.  ``reading`` is the
        :class:`~harp_lib.understand.reading.Reading` of the text, the recording's domain and the
        reference roles, never ``query_type``; a reader may narrow ``reading.s`` for the later ones."""
        return None

    # ------------------------------------------------------------- typed views
    def ground_truth(self, query: Query):
        """``query.ground_truth`` as :attr:`GroundTruth`."""
        return self.GroundTruth.from_dict(query.ground_truth)

    def judge_info(self, query: Query):
        """``query.judge_info`` as :attr:`JudgeInfo`."""
        return self.JudgeInfo.from_dict(query.judge_info)

    # ------------------------------------------------------------- judging
    def parse_decision(self, decision: str) -> Any:
        """What the decision text says, in the type's vocabulary (None when it says nothing)."""
        raise NotImplementedError(f"query type {self.name!r}: parse_decision is not defined")

    def verdict(self, query: Query, decision: str, *, tol: float) -> tuple[int, str]:
        """The rule judge's answer verdict on a non-empty decision: ``(1 | 0, reason)``."""
        raise NotImplementedError(f"query type {self.name!r}: verdict is not defined")

    def accept_window(self, query: Query, tol: float) -> Optional[tuple[float, float]]:
        """The accepted time window of a locate-like type (None for others)."""
        return None

    def ground_truth_lines(self, query: Query, tol: float) -> list[str]:
        """The ground-truth summary shown to the LLM judges, one fact per line."""
        return [f"{k}: {v}" for k, v in query.ground_truth.items()]

    # ------------------------------------------------------------- planning / answering
    def oracle_sets(self, query: Query, evidence: list, gt_segments: list) -> tuple[list[PlanSet], list[str]]:
        """The oracle planner's windows from the ground truth: one set per evidence segment."""
        return [window_set(s.span) for s in evidence], []

    def empty_oracle_is_error(self) -> bool:
        """Whether a query without ground-truth evidence is an error for the oracle planner."""
        return True

    def rule_answer(self, ctx, sets) -> tuple[str, str]:
        """The deterministic answer and cited rationale from the visible evidence ``sets``
        (``[(EvidenceSet, [EvidenceItem, ...]), ...]``)."""
        raise NotImplementedError(f"query type {self.name!r}: no rule answer")

    # ------------------------------------------------------------- human study
    def human_correct(self, query: Query, choice: Any, *, tol: float) -> Optional[bool]:
        """Is a human ``choice`` (never empty here) right?"""
        raise NotImplementedError(f"query type {self.name!r}: human_correct is not defined")

    def __repr__(self) -> str:
        return f"<task {self.name} ({self.domain}, column {self.column!r})>"


# ---------------------------------------------------------------------------------------
# Shared pieces of the rule answers
# ---------------------------------------------------------------------------------------
_TIER_VALUE = {"High": 4.0, "Mid": 3.0, "Low": 2.0}


def cite(it: EvidenceItem, *extra: str, speaker: bool = True) -> str:
    """One citation: ``[12.4s–17.1s] SPEAKER_00 primary=Happy``."""
    bits = [fmt_range(it.start, it.end)]
    if speaker and it.speaker:
        bits.append(it.speaker)
    bits.extend(x for x in extra if x)
    return " ".join(bits)


def dim_value(labels: dict, dim: str) -> Optional[float]:
    """A finite A/V/D value of ``labels`` (a number or ``{"mean": ...}``), else None."""
    v = labels.get(dim)
    if isinstance(v, dict):
        v = v.get("mean")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def aesthetic(labels: dict) -> Optional[float]:
    """A song's overall aesthetic score from its labels (overall, mean of scores, or tier)."""
    v = labels.get("overall")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    sc = labels.get("scores")
    if isinstance(sc, dict) and sc:
        vals = [float(x) for x in sc.values() if isinstance(x, (int, float))]
        if vals:
            return sum(vals) / len(vals)
    if labels.get("primary") in _TIER_VALUE:
        return _TIER_VALUE[labels["primary"]]
    return None


def pair_means(ctx, sets, value, who: str, tag: str) -> tuple[dict[str, float], list[str]]:
    """Mean of ``value(labels)`` over the items of the first two sets (roles A and B) and one
    citation line per role that has values: ``Set 1 (speaker A): 0:10-0:20 A=0.61, mean 0.61``."""
    means: dict[str, float] = {}
    cites: list[str] = []
    for role, (s, items) in zip(("A", "B"), sets[:2]):
        vals = [(it, v) for it, v in ((it, value(it.labels)) for it in items) if v is not None]
        if vals:
            means[role] = sum(v for _, v in vals) / len(vals)
            cites.append(f"Set {s.index} ({who} {role}): " + ", ".join(
                cite(it, f"{tag}{v:.2f}", speaker=ctx.setup.show_metadata) for it, v in vals)
                + f", mean {means[role]:.2f}")
    return means, cites


def dimension_in(text: str, default: str = "valence") -> str:
    """The A/V/D dimension a question asks about (named, or by a cue word), else ``default``."""
    return dimension(text, default) or default


def num(v: Any) -> str:
    """A number as the judge prompts show it (3 significant digits, or one decimal from 100).

    >>> num(0.61234), num(123.456), num("x")
    ('0.612', '123.5', 'x')
    """
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.1f}"
    return str(v)
