"""Emotion query types (LongEmo): state, change, comparison, locate, locate_hard."""
from __future__ import annotations

import math
import re
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from harp_lib.core.answer_format import HEDGE_WORDS, choice_in, direction_in, emotions_in, parse_clock, render_labels, times_in
from harp_lib.understand.cues import CHANGE, EMO_Q, SAME, SOMEONE, WHEN, WHO
from harp_lib.understand.direction import HIGHER, LOWER, pole, polarity
from harp_lib.understand.reading import has
from harp_lib.core.labels import EMOTIONS, emotion_of, normalize_direction, normalize_label
from harp_lib.core.schema import Query, Segment
from harp_lib.core.timespan import Span, format_time
from harp_lib.retrieval.references import reference_label
from harp_lib.tasks.base import Task, TypedRecord, cite, dim_value, dimension_in, no_evidence, num, pair_means, window_set
from harp_lib.tasks.registry import register

__all__ = ["StateTask", "ChangeTask", "ComparisonTask", "LocateTask", "LocateHardTask", "PairwiseTask",
           "StateGT", "StateInfo", "ChangeGT", "ChangeInfo", "ComparisonGT", "ComparisonInfo",
           "LocateGT", "LocateInfo"]


def _emotion(value) -> Optional[str]:
    return normalize_label("emotion", str(value), strict=False) if value else None


def _fmt(t: float) -> str:
    return f"{t:.1f}s"


# ---------------------------------------------------------------------------------------
# typed ground truth and judge info
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class StateGT(TypedRecord):
    emotion: Optional[str] = None
    arousal: Optional[float] = None
    valence: Optional[float] = None
    dominance: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class StateInfo(TypedRecord):
    type: Optional[str] = None
    primary: Optional[str] = None
    secondary: Optional[list] = None


@dataclass(frozen=True, kw_only=True)
class ChangeGT(TypedRecord):
    direction: Optional[str] = None
    dimension: Optional[str] = None
    delta: Optional[float] = None
    half1: Optional[float] = None
    half2: Optional[float] = None
    t0: Optional[float] = None
    t1: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class ChangeInfo(ChangeGT):
    type: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class ComparisonGT(TypedRecord):
    winner: Optional[str] = None
    dimension: Optional[str] = None
    values: Optional[Mapping[str, float]] = None
    t0: Optional[float] = None
    t1: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class ComparisonInfo(ComparisonGT):
    type: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class LocateGT(TypedRecord):
    t0: Optional[float] = None
    t1: Optional[float] = None
    emotion: Optional[str] = None
    quote: Optional[str] = None
    n_events: Optional[int] = None
    events: Optional[list] = None


@dataclass(frozen=True, kw_only=True)
class LocateInfo(TypedRecord):
    type: Optional[str] = None
    t0: Optional[float] = None
    t1: Optional[float] = None
    emotion: Optional[str] = None
    seg_text: Optional[str] = None
    n_events: Optional[int] = None


def window_share(item, window) -> tuple[float, float]:
    """``(share, seconds)``: the part of a segment's length inside a searched window (an object
    with ``start`` / ``end``; an unbounded end counts as no end).

    >>> from types import SimpleNamespace as W
    >>> window_share(W(start=9.4, end=15.0), W(start=10.0, end=20.0))
    (0.893, 5.0)
    >>> window_share(W(start=20.0, end=20.0), W(start=10.0, end=20.0))
    (0.0, 0.0)
    """
    lo, hi = max(item.start, window.start), min(item.end, window.end)
    inside = max(0.0, hi - lo)
    dur = item.end - item.start
    return (round(inside / dur, 3) if dur > 0 else 0.0), round(inside, 3)


# ---------------------------------------------------------------------------------------
# shared: A/B/tie decisions (comparison and the song types)
# ---------------------------------------------------------------------------------------
class PairwiseTask(Task):
    """A/B (or tie) decisions: the first choice named must equal the GT winner; a GT tie also
    accepts a hedged A/B ("marginally better"), as the paper."""

    def parse_decision(self, decision: str) -> Optional[str]:
        return choice_in(decision)

    def verdict(self, query: Query, decision: str, *, tol: float) -> tuple[int, str]:
        want = str(query.ground_truth.get("winner", "")).strip()
        want = want.upper() if want.lower() in ("a", "b") else want.lower()
        said = self.parse_decision(decision)
        if want == "tie":
            hedged = said in ("A", "B") and any(h in decision.lower() for h in HEDGE_WORDS)
            ok = said == "tie" or hedged
            return int(ok), f"GT tie; answer says {said or 'no choice'}{' (hedged)' if hedged else ''}"
        return int(said == want), f"GT winner {want}; answer says {said or 'no choice'}"

    def human_correct(self, query: Query, choice: Any, *, tol: float) -> Optional[bool]:
        return str(choice).strip().lower() == str(query.ground_truth.get("winner")).strip().lower()


# ---------------------------------------------------------------------------------------
# reading state and change: one decision; ChangeTask.read and StateTask.read each keep their own
# task's answer of it, so each reads alone as both do together
# ---------------------------------------------------------------------------------------
def _state_or_change(r):
    """Which emotion was shown (state), or how a dimension changed over a window (change)."""
    s = r.s
    strong_state = re.search(r"\b(?:which|what) (?:kind of )?emotions?\b|\bhow did (?:they|she|he|the speaker) feel\b", s)
    if strong_state and not re.search(r"\bchang\w*|\bshift\w*|\bevolv\w*", s):
        return r.intent("state", "asks which emotion was shown")
    if has(CHANGE, s) and (r.dim or has(r"emotion\w*|mood|feel\w*|tone", s)):
        return r.intent("change", "asks how a dimension changed over a window")
    if has(EMO_Q, s) or re.search(r"\b(?:happy|sad|angry|neutral|disgust\w*|fear\w*|surpris\w*)\b.*\?", s):
        return r.intent("state", "asks which emotion was shown")
    if r.dim and re.search(r"\bhow\b", s):
        return r.intent("change" if r.times else "state", "asks about a dimension")
    return None


@register
class StateTask(Task):
    """Which emotion does the speaker express?  YES when the GT primary emotion is among the
    (non-negated) emotions named, by name or synonym (even alongside others)."""
    name, domain, column, order = "state", "emotion", "State", 10
    plan_tool_groups = (("audio_emb",), ("text_emb", "keyword"))
    GroundTruth, JudgeInfo = StateGT, StateInfo
    human_form = ("multi", [(e, e) for e in EMOTIONS])
    read_order = 40

    @classmethod
    def read(cls, r):
        """Which emotion was shown; declines a change question (:meth:`ChangeTask.read`)."""
        it = _state_or_change(r)
        return it if it is not None and it.task == "state" else None

    def parse_decision(self, decision: str) -> list:
        return emotions_in(decision)

    def verdict(self, query, decision, *, tol):
        want = _emotion(query.ground_truth.get("emotion"))
        said = self.parse_decision(decision)
        return int(want in said), f"GT emotion {want}; answer names {said or 'no emotion'}"

    def ground_truth_lines(self, query, tol):
        gt, ji = query.ground_truth, query.judge_info
        lines = [f"primary emotion: {gt.get('emotion')}"]
        if ji.get("secondary"):
            lines.append(f"secondary emotions (minority votes): {', '.join(map(str, ji['secondary']))}")
        avd = [f"{k}={num(gt[k])}" for k in ("arousal", "valence", "dominance") if k in gt]
        if avd:
            lines.append("arousal/valence/dominance (0-1): " + ", ".join(avd))
        return lines

    def rule_answer(self, ctx, sets):
        votes: dict[str, float] = defaultdict(float)
        cites = []
        for _, items in sets:
            for it in items:
                prim = emotion_of(str(it.labels.get("primary", ""))) if it.labels.get("primary") else None
                if prim is None:
                    continue
                w = max(it.end - it.start, 0.1)
                sc = it.labels.get("scores") or {}
                votes[prim] += w * (float(sc.get(prim, 1.0)) if isinstance(sc, dict) else 1.0)
                cites.append(cite(it, f"primary={prim}", speaker=ctx.setup.show_metadata))
        if not votes:
            return no_evidence("an emotion label", sets)       # never a default class
        best = sorted(votes.items(), key=lambda kv: (-kv[1], EMOTIONS.index(kv[0]) if kv[0] in EMOTIONS else 99))[0][0]
        n = sum(1 for c in cites if f"primary={best}" in c)
        return best, f"{n} of {len(cites)} labelled segments show {best}: " + "; ".join(cites) + "."

    def human_correct(self, query, choice, *, tol):
        chosen = {normalize_label("emotion", str(c), strict=False)
                  for c in ([choice] if isinstance(choice, str) else choice)}
        return normalize_label("emotion", str(query.ground_truth.get("emotion")), strict=False) in chosen


@register
class ChangeTask(Task):
    """How does the speaker's valence (arousal, ...) change?  The first direction named
    (rising/falling/none, with synonyms) must equal the GT direction."""
    name, domain, column, order = "change", "emotion", "Change", 20
    plan_tool_groups = (("audio_emb",), ("text_emb", "keyword"))
    GroundTruth, JudgeInfo = ChangeGT, ChangeInfo
    human_form = ("choice", [("rising", "Goes up"), ("falling", "Goes down"), ("none", "Stays the same")])
    read_order = 30

    @classmethod
    def read(cls, r):
        """How a dimension changed over a window; declines a state question (:meth:`StateTask.read`)."""
        it = _state_or_change(r)
        return it if it is not None and it.task == "change" else None

    def parse_decision(self, decision: str) -> Optional[str]:
        return direction_in(decision)

    def verdict(self, query, decision, *, tol):
        gt = query.ground_truth
        want = normalize_direction(str(gt.get("direction", ""))) or gt.get("direction")
        said = self.parse_decision(decision)
        return int(said == want), f"GT direction {want}; answer says {said or 'no direction'}"

    def ground_truth_lines(self, query, tol):
        gt = query.ground_truth
        lines = [f"direction of {gt.get('dimension', 'valence')}: {gt.get('direction')}"]
        if "half1" in gt:
            lines.append(f"first-half mean {num(gt['half1'])}, second-half mean {num(gt.get('half2'))}, "
                         f"delta {num(gt.get('delta', '?'))}")
        if "t0" in gt:
            lines.append(f"window: {num(gt['t0'])}-{num(gt.get('t1'))} s")
        return lines

    def oracle_sets(self, query, evidence, gt_segments):
        gt = query.ground_truth or {}
        if "t0" in gt and "t1" in gt:
            return [window_set(Span(float(gt["t0"]), float(gt["t1"])), "trend window")], []
        return super().oracle_sets(query, evidence, gt_segments)

    def rule_answer(self, ctx, sets):
        dim = dimension_in(ctx.query.text)
        thr = float(ctx.params.trend_threshold)
        pts = []
        lo, hi = 0.0, math.inf
        for s, items in sets[:1] or []:
            # the target speaker: the one holding most of the window (when speakers are shown)
            dur: dict = defaultdict(float)
            for it in items:
                dur[it.speaker] += it.end - it.start
            main = max(sorted(dur, key=str), key=lambda k: dur[k]) if dur else None
            for it in items:
                v = dim_value(it.labels, dim)
                if v is not None and (it.speaker == main or main is None):
                    pts.append((it, v))
            lo, hi = s.start, s.end
        if len(pts) < 2:                           # one point shows no change either way: no answer
            c = "; ".join(cite(it, f"{dim}={v:.2f}") for it, v in pts)
            return no_evidence(f"a second {dim} value to see a change ({c})" if pts else f"a {dim} value", sets)
        if math.isfinite(hi) and hi > lo:
            mid = (lo + hi) / 2
        else:
            mid = (pts[0][0].start + pts[-1][0].end) / 2
        first = [v for it, v in pts if (it.start + it.end) / 2 < mid]
        second = [v for it, v in pts if (it.start + it.end) / 2 >= mid]
        if first and second:
            h1, h2 = sum(first) / len(first), sum(second) / len(second)
        else:
            h1, h2 = pts[0][1], pts[-1][1]
        delta = h2 - h1
        sign = pole(ctx.query.text, dim)           # "how did their calmness change": the low pole
        direction = "none" if abs(delta) < thr else ("rising" if delta * sign > 0 else "falling")
        cites = "; ".join(cite(it, f"{dim[0].upper()}={v:.2f}", speaker=ctx.setup.show_metadata) for it, v in pts)
        low = "" if sign > 0 else f" (the question asks about the low pole of {dim}, so {direction})"
        return direction, (f"{dim} moves from {h1:.2f} (first half) to {h2:.2f} (second half), "
                           f"delta {delta:+.2f}{low}: {cites}.")

    def human_correct(self, query, choice, *, tol):
        return normalize_direction(str(choice)) == normalize_direction(str(query.ground_truth.get("direction")))


def _role_of(seg: Segment, query: Query) -> Optional[str]:
    for key in ("role", "speaker_role", "ref_role"):
        v = seg.custom.get(key)
        if v in ("A", "B"):
            return v
    spk = query.custom.get("speakers") or query.custom.get("speaker_map") or {}
    if isinstance(spk, dict):
        for role, sid in spk.items():
            if sid == seg.speaker and role in ("A", "B"):
                return role
    for role in ("A", "B"):
        v = query.custom.get(f"speaker_{role.lower()}") or query.custom.get(f"speaker_{role}")
        if isinstance(v, dict):
            v = v.get("speaker") or v.get("id")
        if v is not None and v == seg.speaker:
            return role
    return None


@register
class ComparisonTask(PairwiseTask):
    """Which speaker shows higher arousal (valence, ...)?  A/B decision."""
    name, domain, column, order = "comparison", "emotion", "Comp.", 30
    plan_tool_groups = (("audio_emb",), ("text_emb", "keyword"))
    GroundTruth, JudgeInfo = ComparisonGT, ComparisonInfo
    human_form = ("choice", [("A", "Speaker A"), ("B", "Speaker B")])
    read_order = 20

    @classmethod
    def read(cls, r):
        """Which of two speakers is higher / lower on a named dimension."""
        s = r.s
        two = ("A" in r.roles and "B" in r.roles) or re.search(r"\bspeaker a\b.*\bspeaker b\b|\ba or b\b", s)
        comparative = re.search(r"\b(?:" + LOWER + "|" + HIGHER + r")\b|\w+er\b(?=.*\b(?:a or b|speaker|who|which)\b)"
                                r"|\b(?:who|which speaker)\b.*\w+er\b", s)
        if two and (has(WHO, s) or comparative) and r.dim:
            return r.intent("comparison", "asks which of two speakers is higher/lower on a dimension")
        return None

    def ground_truth_lines(self, query, tol):
        gt = query.ground_truth
        vals = gt.get("values") or {}
        lines = [f"winner: {gt.get('winner')} (higher {gt.get('dimension', '?')})"]
        if vals:
            lines.append("values: " + ", ".join(f"{k}={num(v)}" for k, v in sorted(vals.items())))
        return lines

    def oracle_sets(self, query, evidence, gt_segments):
        """One set per speaker, A first: the hull of that speaker's evidence segments."""
        gt = query.ground_truth or {}
        groups: "OrderedDict[str, list[Segment]]" = OrderedDict()
        for s in evidence:
            role = _role_of(s, query)
            groups.setdefault(role or f"spk:{s.speaker}", []).append(s)
        keys = sorted(groups, key=lambda k: (0 if k == "A" else 1 if k == "B" else 2, groups[k][0].start))
        sets = [window_set(Span(min(s.start for s in groups[k]), max(s.end for s in groups[k])), f"speaker {k}")
                for k in keys]
        if not sets and "t0" in gt and "t1" in gt:
            return [window_set(Span(float(gt["t0"]), float(gt["t1"])))], \
                ["no speaker evidence segments; used the comparison window"]
        return sets, []

    def rule_answer(self, ctx, sets):
        dim = dimension_in(ctx.query.text, "arousal")
        means, cites = pair_means(ctx, sets, lambda lab: dim_value(lab, dim), "speaker", f"{dim[0].upper()}=")
        if not means:
            return no_evidence(f"a {dim} value for either speaker", sets)
        if len(means) < 2:
            win = next(iter(means))
            return win, f"Only speaker {win} has {dim} evidence; " + ("; ".join(cites) or "no labelled segments") + "."
        sign = polarity(ctx.query.text, dim)       # "who sounded calmer / sadder / less ...": the lower side
        win = "A" if sign * means["A"] >= sign * means["B"] else "B"
        return win, (f"Speaker {win} has {'higher' if sign > 0 else 'lower'} {dim} ({means['A']:.2f} vs "
                     f"{means['B']:.2f}): " + "; ".join(cites) + ".")


@register
class LocateTask(Task):
    """When does the speaker sound like the reference emotion?  The first time of the answer
    (a range counts by its middle) must lie in ``[t0 - tol, t1 + tol]`` AND the GT emotion be named."""
    name, domain, column, order = "locate", "emotion", "Locate", 40
    plan_tool_groups = (("audio_emb",), ("domain_emb",), ("label",))
    GroundTruth, JudgeInfo = LocateGT, LocateInfo
    human_form = ("time", [])
    read_order = 10

    @staticmethod
    def asks_when(r) -> bool:
        """A moment asked for, with the reference clip (role E) or "the same emotion as the clip"."""
        when, same = has(WHEN, r.s), has(SAME, r.s)
        return bool((when or same) and ("E" in r.roles or same))

    @staticmethod
    def this_speaker(r) -> bool:
        """The moment of this speaker (role A, "the speaker", "she"), not of anyone."""
        return bool("A" in r.roles or (re.search(r"\b(?:this|the|that) (?:speaker|person|voice)|\b(?:she|he)\b", r.s)
                                       and not has(SOMEONE, r.s)))

    @classmethod
    def read(cls, r):
        """When this speaker showed the reference clip's emotion."""
        if cls.asks_when(r) and cls.this_speaker(r):
            return r.intent("locate", "asks when this speaker showed the reference emotion")
        return None

    def parse_decision(self, decision: str) -> tuple[Optional[float], list]:
        times = times_in(decision)
        return (times[0].middle if times else None), emotions_in(decision)

    def accept_window(self, query, tol):
        gt = query.ground_truth
        return float(gt["t0"]) - tol, float(gt["t1"]) + tol

    def verdict(self, query, decision, *, tol):
        gt = query.ground_truth
        t0, t1 = float(gt["t0"]), float(gt["t1"])
        lo, hi = self.accept_window(query, tol)
        want = _emotion(gt.get("emotion"))
        t, said = self.parse_decision(decision)
        if t is None:
            return 0, f"no time in the answer (GT {_fmt(t0)}–{_fmt(t1)}, {want})"
        in_win = lo <= t <= hi
        emo_ok = want in said
        why = (f"answer time {_fmt(t)} {'inside' if in_win else 'outside'} accept window "
               f"[{_fmt(lo)}, {_fmt(hi)}]; GT emotion {want}, answer names {said or 'none'}")
        return int(in_win and emo_ok), why

    def ground_truth_lines(self, query, tol):
        gt = query.ground_truth
        t0, t1 = float(gt["t0"]), float(gt["t1"])
        lines = [f"emotion: {gt.get('emotion')}",
                 f"ground-truth window: {t0:.1f}-{t1:.1f} s (accept window {t0 - tol:.1f}-{t1 + tol:.1f} s)"]
        if gt.get("quote"):
            lines.append(f'reference text: "{gt["quote"]}"')
        if "n_events" in gt:
            lines.append(f"emotional events in the recording: {gt['n_events']}")
        return lines

    def oracle_sets(self, query, evidence, gt_segments):
        sets, errs = super().oracle_sets(query, evidence, gt_segments)
        gt = query.ground_truth or {}
        if not sets and "t0" in gt and "t1" in gt:
            sets = [window_set(Span(float(gt["t0"]), float(gt["t1"])))]
        return sets, errs

    def rule_answer(self, ctx, sets):
        """The segment that best matches the reference emotion, among those mostly inside the asked
        window: a segment with less than ``agent.locate_min_share`` of its length inside the window
        (a neighbour a rounded window clips by 0.6 s) is taken only when no other is; then the label
        match, the label and clip scores weighted by the share inside, the share inside, the earliest start."""
        target = reference_label(ctx, "E")   # the reference clip's label (heard or stored)
        min_share = float(ctx.params.locate_min_share)
        best, best_key = None, None
        for es, items in sets:
            for it in items:
                prim = emotion_of(str(it.labels.get("primary"))) if it.labels.get("primary") else None
                sc = it.labels.get("scores") or {}
                p = float(sc.get(target, 0.0)) if target and isinstance(sc, dict) else 0.0
                share, _ = window_share(it, es)
                key = (share >= min_share, (prim == target) if target else prim not in (None, "Neutral"),
                       round(p * share, 6), round(float(it.sources.get("domain_emb", 0.0)) * share, 6), share,
                       -it.start)
                if best_key is None or key > best_key:
                    best, best_key = it, key
        if best is None:
            return (f"unknown ({target or 'emotion unknown'})",
                    "No segment was retrieved in the search window.")
        emo = target or emotion_of(str(best.labels.get("primary"))) or "emotion unknown"
        t = (best.start + best.end) / 2
        quote = f' saying "{best.text}"' if best.text else ""
        match = "matches" if best_key[1] else "is the closest match to"
        return (f"{format_time(t)} ({emo})",
                f"{cite(best, render_labels(best.labels) if best.labels else '', speaker=ctx.setup.show_metadata)}"
                f"{quote} {match} the reference emotion {target or '(reference not labelled)'}.")

    def human_correct(self, query, choice, *, tol):
        try:
            t = parse_clock(str(choice))
        except ValueError:
            return False
        lo, hi = self.accept_window(query, tol)
        return lo <= t <= hi


@register
class LocateHardTask(LocateTask):
    """Locate among several emotional events (``n_events`` in the ground truth)."""
    name, column, order = "locate_hard", "Locate+", 50
    plan_tool_groups = (("domain_emb",), ("label",))
    read_order = 11

    @classmethod
    def read(cls, r):
        """When anyone showed the reference clip's emotion (this speaker's: :meth:`LocateTask.read`)."""
        if cls.asks_when(r) and not cls.this_speaker(r):
            return r.intent("locate_hard", "asks when anyone showed the reference emotion")
        return None
