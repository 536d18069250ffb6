"""The deterministic rule judge: type-aware answer matching, factual and faithfulness checks.

**answer** (per query type, on the decision text before ``Rationale:``; each rule is the
``verdict`` of the type's task class in :mod:`harp_lib.tasks`)

* state: the ground-truth primary emotion is among the (non-negated) emotions named, by name or
  synonym (the paper's rule: YES even alongside others);
* change: the first direction named (rising/falling/none, with synonyms) equals the GT direction;
* comparison, time, position, audio: the A/B/tie decision ("A", "Speaker B", "Set 1",
  "the first song", "tie") equals the GT winner; a GT tie also accepts a hedged A/B
  ("marginally better"), as the paper;
* locate, locate_hard: the first time in the answer (a range counts by its middle) lies in
  ``[t0 - tol, t1 + tol]`` (``evaluate.locate_tolerance_sec``) AND the GT emotion is named;
* reported, exhibited: the first Yes/No equals the GT answer.

**factual** -- the rationale is factually correct when (1) it exists, (2) the conclusion it
supports is right (the answer verdict is YES), (3) no cited time lies after the end of the
recording, and (4) every label cited at a time (``[12.4s–17.1s] primary=Happy``, "2 cough")
agrees with the ground-truth labels of the GT segments overlapping that time (emotion/tier:
the ``primary`` label of some overlapping GT segment; clinical: cough presence).  Labels the GT
does not have at that time are not checkable and pass.

**faithful** -- everything cited in the answer and rationale is in the retrieved evidence
(``Prediction.evidence``): each cited time or range lies inside a retrieved item or an attached
audio clip, or equals a searched window or a time of the question (within
``evaluate.citation_rounding_sec``); each cited label is the label of a retrieved item at that
time; each cited speaker id is a retrieved item's speaker.  As in the paper, the verdict is NO
only when something cited is missing, so a rationale that cites nothing is faithful (its
conclusion is still checked by *factual*).

>>> from harp_lib.core.schema import Query
>>> q = Query("q", "clinical", "r", "reported", "?", {"answer": "Yes"})
>>> RuleJudge().answer_verdict(q, "Yes, she mentions a cough").value
1
"""
from __future__ import annotations

import hashlib
from typing import Optional

from harp_lib import tasks
from harp_lib.core.answer_format import citations_in, cough_present, split_rationale, times_in
from harp_lib.config import register
from harp_lib.core.labels import normalize_label
from harp_lib.core.schema import Judgement, Query
from harp_lib.evaluate.judge import JudgeInput, Verdict, combine

__all__ = ["RuleJudge", "RULES_VERSION"]

#: Bump when the rules change, so judgements of an older rule set are recognisable.
RULES_VERSION = "rule-judge/1"


def _has_cough(labels: dict) -> Optional[bool]:
    """Cough presence from a label dict (``cough_count``, else a cough ``primary``), or None."""
    n = labels.get("cough_count")
    if isinstance(n, (int, float)) and not isinstance(n, bool):
        return n > 0
    prim = labels.get("primary")
    return cough_present(prim) if isinstance(prim, str) else None


def _gt_at(segments, start: float, end: float, rounding: float) -> list:
    """Segments (GT or retrieved) a cited time refers to: those overlapping a range by more than the rounding
    (so a range ending at a boundary does not drag in the neighbour), or containing a point."""
    if end - start > 2 * rounding:
        return [g for g in segments if min(g.end, end) - max(g.start, start) > rounding]
    return [g for g in segments if g.start - rounding <= (start + end) / 2 <= g.end + rounding]


def _fmt(t: float) -> str:
    return f"{t:.1f}s"


@register("judge", "rule")
class RuleJudge:
    """Deterministic judge (see module docstring).

    >>> RuleJudge(locate_tolerance_sec=3.0).prompt_hash == RuleJudge(locate_tolerance_sec=3.0).prompt_hash
    True
    """
    name = "rule"

    def __init__(self, *, locate_tolerance_sec: float = 3.0, citation_rounding_sec: float = 0.5,
                 name: str = "rule"):
        self.name = name
        self.tol = float(locate_tolerance_sec)
        self.rounding = float(citation_rounding_sec)
        self.model_id = RULES_VERSION
        cfg = f"{RULES_VERSION}|tol={self.tol}|rounding={self.rounding}"
        self.prompt_hash = hashlib.sha256(cfg.encode()).hexdigest()[:12]

    # ---------------------------------------------------------------- answer
    def answer_verdict(self, query: Query, decision: str) -> Verdict:
        """Is the decision text right for this query?"""
        if not decision.strip():
            return Verdict(0, "empty answer")
        try:
            task = tasks.get(query.query_type)
        except tasks.UnknownTaskError:
            raise ValueError(f"query {query.query_id}: no answer rule for query type {query.query_type!r}") from None
        return Verdict(*task.verdict(query, decision, tol=self.tol))

    # ---------------------------------------------------------------- factual
    def factual_verdict(self, inp: JudgeInput, decision: str, rationale: str, answer: Verdict) -> Verdict:
        """Does the rationale agree with the ground truth (see module docstring)?"""
        if not rationale.strip():
            return Verdict(0, "no rationale given")
        if not answer.value:
            return Verdict(0, f"the rationale supports a wrong answer ({answer.reason})")
        domain = inp.query.domain
        cites = citations_in(decision + "\n" + rationale, domain)
        r = self.rounding
        if inp.duration is not None:
            late = [c.text for c in cites.times if c.start > inp.duration + r]
            if late:
                return Verdict(0, f"cites {late[0]!r}, after the end of the recording "
                                  f"({_fmt(inp.duration)})")
        for lab, t in cites.labels:
            if t is None:
                continue
            over = _gt_at(inp.gt_segments, t.start, t.end, r)
            if lab.key == "cough":
                facts = [f for f in (_has_cough(g.labels) for g in over) if f is not None]
                said = cough_present(lab.value)
                if facts and said is not None and said != any(facts):
                    return Verdict(0, f"cites {lab.raw!r} at {t.text}, but the ground truth there has "
                                      f"{'a cough' if any(facts) else 'no cough'}")
                continue
            gt_labels = {self._norm(domain, g.labels.get("primary")) for g in over
                         if g.labels.get("primary") is not None}
            if gt_labels and lab.value not in gt_labels:
                return Verdict(0, f"cites {lab.raw!r} at {t.text}, but the ground truth there is "
                                  f"{sorted(gt_labels)}")
        return Verdict(1, f"conclusion right; {len(cites.labels)} cited label(s) consistent with ground truth")

    @staticmethod
    def _norm(domain: str, v) -> str:
        s = str(v)
        return normalize_label(domain, s, strict=False) or s

    # ---------------------------------------------------------------- faithful
    def faithful_verdict(self, inp: JudgeInput, decision: str, rationale: str) -> Verdict:
        """Is everything cited present in the retrieved evidence?"""
        ev = inp.prediction.evidence
        items = ev.items()
        r = self.rounding
        domain = inp.query.domain
        cites = citations_in(decision + "\n" + rationale, domain)
        if cites.empty:
            # the paper's rule: NO only when something is stated that the evidence lacks
            return Verdict(1, "cites no time, label or speaker (nothing ungrounded)")
        clips = [(s.clip_start, s.clip_end) for s in ev.sets
                 if s.clip_start is not None and s.clip_end is not None]
        windows = [(s.start, s.end) for s in ev.sets]
        qtimes = [(c.start, c.end) for c in times_in(inp.query.text)]
        missing: list[str] = []
        for c in cites.times:
            inside = any(i.start - r <= c.start and c.end <= i.end + r for i in items) or \
                any(a - r <= c.start and c.end <= b + r for a, b in clips)
            same = any(abs(a - c.start) <= r and abs(b - c.end) <= r for a, b in windows + qtimes)
            if not (inside or same):
                missing.append(f"time {c.text.strip()}")
        for lab, t in cites.labels:
            cand = items if t is None else _gt_at(items, t.start, t.end, r)
            if not any(self._item_has(i.labels, lab, domain) for i in cand):
                missing.append(f"label {lab.raw.strip()}" + (f" at {t.text.strip()}" if t else ""))
        speakers = {i.speaker for i in items if i.speaker}
        for spk in cites.speakers:
            if spk not in speakers:
                missing.append(f"speaker {spk}")
        if missing:
            return Verdict(0, "not in the retrieved evidence: " + "; ".join(missing[:4])
                           + (f" (+{len(missing) - 4} more)" if len(missing) > 4 else ""))
        n = len(cites.times) + len(cites.labels) + len(cites.speakers)
        return Verdict(1, f"all {n} citation(s) found in the retrieved evidence")

    def _item_has(self, labels: dict, lab, domain: str) -> bool:
        if lab.key == "cough":
            have = _has_cough(labels)
            return have is not None and have == cough_present(lab.value)
        for k in ("primary", "label", "tier", "emotion"):
            v = labels.get(k)
            if v is not None and self._norm(domain, v) == lab.value:
                return True
        return False

    # ---------------------------------------------------------------- all three
    def judge(self, inp: JudgeInput) -> Judgement:
        p = inp.prediction
        decision, rationale = split_rationale(p.answer, p.rationale)
        answer = self.answer_verdict(inp.query, decision)
        factual = self.factual_verdict(inp, decision, rationale, answer)
        faithful = None if inp.setup.skip_faithful else self.faithful_verdict(inp, decision, rationale)
        return combine(self.name, self.model_id, self.prompt_hash, inp.setup, p.query_id, answer,
                       factual, faithful, error=p.error)
