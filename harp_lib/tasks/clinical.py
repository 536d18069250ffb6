"""Clinical query types (MedMosaic): reported (Semantic) and exhibited (Acoustic) symptoms."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from harp_lib.core.answer_format import yes_no_in
from harp_lib.core.labels import RESPIRATORY_TERMS, cough_count
from harp_lib.core.timespan import LocalizeError, Span, localize
from harp_lib.extract.symptoms import QUESTION_OPENERS, negated_or_question
from harp_lib.tasks.base import Task, TypedRecord, cite, n_items, no_evidence, window_set
from harp_lib.tasks.registry import read_question, register
from harp_lib.understand.cues import EXCLUDED_CLAUSE, HEARD, RESP, SAID
from harp_lib.understand.reading import has

__all__ = ["YesNoGT", "YesNoInfo", "YesNoTask", "ReportedTask", "ExhibitedTask"]

_NEGATION = re.compile(r"\b(no|not|never|without|denies|deny|don't|didn't|haven't|hasn't)\b(\W+\w+){0,2}\W+$")


@dataclass(frozen=True, kw_only=True)
class YesNoGT(TypedRecord):
    answer: Optional[str] = None
    t0: Optional[float] = None      # the consultation's window in a session recording (the question names it)
    t1: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class YesNoInfo(TypedRecord):
    type: Optional[str] = None
    group: Optional[str] = None
    annotation: Optional[str] = None


class YesNoTask(Task):
    """Yes/No questions: the first Yes/No of the answer must equal the GT answer."""
    domain = "clinical"
    GroundTruth, JudgeInfo = YesNoGT, YesNoInfo
    human_form = ("choice", [("Yes", "Yes"), ("No", "No")])

    @staticmethod
    def symptom_cues(r) -> Optional[tuple]:
        """``(heard, said)``, the cue matches of a question about respiratory symptoms (None: it names
        none), after cutting a "leaving aside ..." clause from ``r.s`` (for the later readers too)."""
        if not has(RESP, r.s):
            return None
        r.s = re.sub(EXCLUDED_CLAUSE, " ", r.s)
        return has(HEARD, r.s), has(SAID, r.s)

    @staticmethod
    def asks_heard(r, heard, said) -> bool:
        """A hearing cue, before any saying cue (or "actually", "audibly")."""
        return bool(heard and (not said or heard.start() < said.start() or re.search(r"\bactually\b|\baudibl", r.s)))

    def parse_decision(self, decision: str) -> Optional[str]:
        return yes_no_in(decision)

    def verdict(self, query, decision, *, tol):
        want = str(query.ground_truth.get("answer", "")).strip().capitalize()
        said = self.parse_decision(decision)
        return int(said == want), f"GT {want}; answer says {said or 'neither yes nor no'}"

    def ground_truth_lines(self, query, tol):
        lines = [f"answer: {query.ground_truth.get('answer')}"]
        for k in ("group", "annotation"):
            if query.judge_info.get(k):
                lines.append(f"{k}: {query.judge_info[k]}")
        return lines

    def oracle_sets(self, query, evidence, gt_segments):
        """One set per evidence segment; a "No" has nothing to find: the consultation's window
        (``t0``/``t1`` in a session recording), else the whole recording (the planner's fallback)."""
        if evidence:
            return super().oracle_sets(query, evidence, gt_segments)
        gt = self.ground_truth(query)
        if gt.t0 is not None and gt.t1 is not None:
            return [window_set(Span(float(gt.t0), float(gt.t1)))], []
        return [], []

    def empty_oracle_is_error(self) -> bool:
        return False   # a "No" has nothing to find: the whole consultation is the right window

    def human_correct(self, query, choice, *, tol):
        return str(choice).strip().lower() == str(query.ground_truth.get("answer")).strip().lower()


@register
class ReportedTask(YesNoTask):
    """Does the patient report a respiratory symptom (said in words)?"""
    name, column, order = "reported", "Semantic", 60
    read_order = 20

    @classmethod
    def read(cls, r):
        """Respiratory symptoms said, or a plain yes/no about them (heard: :meth:`ExhibitedTask.read`)."""
        cues = cls.symptom_cues(r)
        if cues is None or cls.asks_heard(r, *cues):
            return None
        said = cues[1]
        if said:
            return r.intent("reported", f"asks whether respiratory symptoms are reported ({said.group(0)!r})")
        if re.search(r"\b(?:did|does|do|was|were|is|are|has|have)\b", r.s):
            return r.intent("reported", "a yes/no question about respiratory symptoms (default: reported)")
        return None

    def rule_answer(self, ctx, sets):
        """Yes when a visible turn mentions a respiratory symptom (a word of the transcript, or a
        keyword-spotting hit in ``labels.symptoms``) and that mention is a report, not:

        * negated or a question (the whole turn: :func:`~harp_lib.extract.symptoms.negated_or_question`);
        * a question that the next visible turn denies ("Any cough?" -> "No, no cough at all"):
          a mention directly followed (<= ``_ADJACENT_SEC``) by a denial turn is the clinician asking;
        * said by the clinician, when speakers are shown: the speaker of the turn that opens the
          named consultation window (the visible item starting within ``_OPENING_SEC`` of it),
          when at least two speakers are visible.
        """
        items = sorted({it.segment_id: it for _, its in sets for it in its}.values(), key=lambda i: (i.start, i.end))
        window = _named_window(ctx)
        clinician = None
        if ctx.setup.show_metadata and items and window is not None and items[0].speaker \
                and abs(items[0].start - window[0]) <= _OPENING_SEC \
                and len({it.speaker for it in items if it.speaker}) >= 2:
            clinician = items[0].speaker      # the opening turn of a dialogue (two speakers visible)
        found = [_mention(it) for it in items]
        denial = [_is_denial(it, f) for it, f in zip(items, found)]
        cites, skipped = [], []
        for k, (it, (what, negated)) in enumerate(zip(items, found)):
            if not what or negated:
                continue
            nxt = k + 1
            if nxt < len(items) and denial[nxt] and items[nxt].start - it.end <= _ADJACENT_SEC:
                skipped.append(f"{cite(it, what, speaker=ctx.setup.show_metadata)} (asked, then denied)")
                continue
            if clinician is not None and it.speaker == clinician:
                skipped.append(f"{cite(it, what, speaker=True)} (the clinician)")
                continue
            cites.append(cite(it, what, speaker=ctx.setup.show_metadata))
        extra = (" Not counted: " + "; ".join(skipped) + ".") if skipped else ""
        if cites:
            return "Yes", "Respiratory symptoms are mentioned: " + "; ".join(dict.fromkeys(cites)) + "." + extra
        n = len(items)
        if not n:
            return no_evidence("a turn", sets)
        return "No", f"None of the {n} retrieved turns reports a respiratory symptom." + extra


#: a mention this close before a denial turn is the question being denied
_ADJACENT_SEC = 3.0
#: the visible item starting this close to the named window's start is the opening (clinician) turn
_OPENING_SEC = 2.5
_DENIAL_OPENERS = ("no", "not", "nothing", "none", "never", "nope")


def _named_window(ctx) -> Optional[tuple[float, float]]:
    """The time window the question names ("from 12:04 to 13:35"), else the whole recording."""
    times = read_question(ctx.query.text, "clinical").times
    if not times:
        return (0.0, float(ctx.recording.duration or float("inf")))
    try:
        sp = localize(times[0], ctx.recording)
    except LocalizeError:
        return None
    return (float(sp.start), float(sp.end))


def _mention(it) -> tuple[Optional[str], bool]:
    """(what was found, negated-or-question) for one visible turn."""
    low = (it.text or "").lower()
    found = None
    for term in RESPIRATORY_TERMS:
        m = re.search(r"\b" + term + r"\w*", low)
        if m:
            found = f'"{m.group(0)}"'
            if _NEGATION.search(low[:m.start()]):
                return found, True
            break
    syms = it.labels.get("symptoms") or []
    if not found and syms:
        found = "symptoms=" + ",".join(map(str, syms))
    if not found:
        return (None, bool(it.labels.get("symptoms_negated")))
    return found, negated_or_question(low)


def _is_denial(it, mention: tuple[Optional[str], bool]) -> bool:
    """A turn that denies: it opens with a negation ("No, nothing like that"), or negates a symptom."""
    words = re.sub(r"[^a-z' ]+", " ", (it.text or "").lower()).split()
    if words[:1] and words[0] in _DENIAL_OPENERS:
        return True
    return bool(it.labels.get("symptoms_negated")) or bool(mention[0] and mention[1]
                                                               and not _is_question(words))


def _is_question(words: list[str]) -> bool:
    head = " ".join(words[:3])
    return any(head == q or head.startswith(q + " ") for q in QUESTION_OPENERS)


@register
class ExhibitedTask(YesNoTask):
    """Does the patient audibly cough (or sneeze, clear the throat)?"""
    name, column, order = "exhibited", "Acoustic", 70
    read_order = 10

    @classmethod
    def read(cls, r):
        """Respiratory symptoms heard (before :meth:`ReportedTask.read`: it cuts the excluded clause)."""
        cues = cls.symptom_cues(r)
        if cues is None or not cls.asks_heard(r, *cues):
            return None
        heard = cues[0]
        return r.intent("exhibited", f"asks whether respiratory symptoms are heard ({heard.group(0)!r})")

    def rule_answer(self, ctx, sets):
        cites = []
        for _, items in sets:
            for it in items:
                n = it.labels.get("cough_count")
                if not isinstance(n, int):
                    try:
                        n = cough_count(str(it.labels.get("primary", "")))
                    except ValueError:
                        n = 0
                ev = [e for e in (it.labels.get("events") or []) if e in ("cough", "sneeze", "throat_clear")]
                if n > 0 or ev:
                    cites.append(cite(it, f"cough_count={n}" + (f" events={','.join(ev)}" if ev else ""),
                                      speaker=ctx.setup.show_metadata))
        if cites:
            return "Yes", "Audible respiratory events: " + "; ".join(dict.fromkeys(cites)) + "."
        n = n_items(sets)
        if not n:                                  # silence, a tone: nothing heard is no evidence
            return no_evidence("a sound", sets)
        return "No", f"No cough or respiratory sound in the {n} retrieved segments."
