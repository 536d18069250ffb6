"""What a small text LLM answerer cannot compute itself: an evidence digest and the answer's form.

The 0.5B offline model (:mod:`harp_lib.llm.local`) does not average labels over segments, split a
window into halves or line up candidate times; given only the evidence lines it echoed the
question's words ("valence" for a Change question) and its answers did not depend on the
evidence (Table II LLM rows identical in A1-A6).  So the text answerer gets, after the evidence
lines, a block of **facts computed from that evidence** (:func:`evidence_digest`) and decodes its
``answer`` field under an enum whose values follow the question's intent
(:func:`answer_choices`):

* the intent comes from the question TEXT (:func:`harp_lib.tasks.read_question`), never from
  ``Query.query_type`` or ground truth;
* the digest is computed on :func:`harp_lib.agent.multimodal.visible_sets` — exactly what the
  setup's answerer may see (metadata in A1-A3, what the offline labelers heard in A4/A6, both
  fused in A5/A7) — so it differs between setups exactly where their evidence does;
* it does arithmetic only (means, counts, halves, times, which set is which role); the decision
  is the model's.

>>> answer_choices(read_question("How did the speaker's valence change from 1:00 to 3:00?", "emotion"), "emotion")
['rising', 'falling', 'none']
>>> answer_choices(read_question("Which song is better, the 2nd or the 5th?", "song"), "song")
['A', 'B', 'tie']
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Optional

from harp_lib.core.timespan import format_time
from harp_lib.core.labels import EMOTIONS, emotion_of
from harp_lib.understand.intent import Intent
from harp_lib.tasks import read_question
from harp_lib.tasks.base import aesthetic, dim_value, dimension_in
from harp_lib.tasks.clinical import _mention
from harp_lib.retrieval.references import reference_label
from harp_lib.agent.evidence import fmt_range
from harp_lib.agent.heard import HEARD_HEADER
from harp_lib.agent.multimodal import visible_sets

__all__ = ["answer_choices", "evidence_digest", "DIGEST_HEADER"]

DIGEST_HEADER = "FACTS COMPUTED FROM THE EVIDENCE ABOVE (arithmetic done for you; use them)"


def answer_choices(intent: Intent, domain: str, candidates: Optional[list[str]] = None) -> Optional[list[str]]:
    """The allowed values of the answer field for this intent (None: free text).

    ``candidates``: for locate questions, the ``m:ss (Emotion)`` strings of the digest.
    """
    t = intent.task
    if t == "state":
        return list(EMOTIONS)
    if t == "change":
        return ["rising", "falling", "none"]
    if t == "comparison":
        return ["A", "B"]
    if t in ("locate", "locate_hard"):
        return list(dict.fromkeys(candidates)) if candidates else None
    if t in ("reported", "exhibited"):
        return ["Yes", "No"]
    if t in ("time", "position", "audio"):
        return ["A", "B", "tie"]
    return None            # a question no task fits: free text (the LLM is the route for those)


def _mean(v: list[float]) -> Optional[float]:
    return sum(v) / len(v) if v else None


def _f(v: Optional[float]) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def evidence_digest(ctx, evidence, intent: Optional[Intent] = None) -> tuple[str, list[tuple[str, str]]]:
    """``(digest text, options)`` for the question's intent, on what the setup may see.

    ``options``: ``(shown, decision)`` pairs, the answer field's enum (``shown``) and what each
    means (``decision``).  Each allowed answer is annotated with what the arithmetic says about it
    ("B (the higher arousal)", "falling (the value went down)"), so the small model's decision is a
    match between the question's words and an option's, not arithmetic.  Empty: free text.
    """
    intent = intent or read_question(ctx.query.text, ctx.domain, tuple(ctx.query.references))
    sets, _ = visible_sets(ctx, evidence)
    digest = _DIGESTS.get(intent.task)
    lines, opts = digest(ctx, sets, intent) if digest else ([], [])
    if intent.absence:
        lines.append("the question asks whether symptoms were ABSENT (Yes = none found)")
    if not opts:
        opts = [(c, c.split(" (")[0]) for c in (answer_choices(intent, ctx.domain) or [])]
    if not lines:
        return "", opts
    return DIGEST_HEADER + ":\n" + "\n".join(f"- {ln}" for ln in lines), opts


def _digest_state(ctx, sets, intent: Intent) -> tuple[list[str], list[tuple[str, str]]]:
    """Time share of each emotion label; the emotions as options, most labelled first."""
    lines: list[str] = []
    opts: list[tuple[str, str]] = []
    dur: dict[str, float] = defaultdict(float)
    for _, items in sets:
        for it in items:
            e = emotion_of(str(it.labels.get("primary"))) if it.labels.get("primary") else None
            if e:
                dur[e] += max(it.end - it.start, 0.1)
    tot = sum(dur.values())
    ranked = sorted(dur.items(), key=lambda kv: -kv[1])
    if tot:
        lines.append("time share of each emotion label: " + ", ".join(f"{e} {100 * d / tot:.0f}%" for e, d in ranked))
        opts += [(f"{e} ({100 * d / tot:.0f}% of the labelled time)", e) for e, d in ranked]
    else:
        lines.append("no emotion labels in the evidence")
    opts += [(e, e) for e in EMOTIONS if e not in dur]
    return lines, opts


def _digest_change(ctx, sets, intent: Intent) -> tuple[list[str], list[tuple[str, str]]]:
    """Mean of the dimension in the two halves of the window; rising / falling / none."""
    lines: list[str] = []
    opts: list[tuple[str, str]] = []
    dim = dimension_in(ctx.query.text)
    s, items = sets[0] if sets else (None, [])
    dur: dict = defaultdict(float)
    for it in items:
        dur[it.speaker] += it.end - it.start
    main = max(sorted(dur, key=str), key=lambda k: dur[k]) if dur else None
    pts = [(it, dim_value(it.labels, dim)) for it in items if it.speaker == main or main is None]
    pts = [(it, v) for it, v in pts if v is not None]
    if s is not None and math.isfinite(s.end) and s.end > s.start:
        mid = (s.start + s.end) / 2
    elif pts:
        mid = (pts[0][0].start + pts[-1][0].end) / 2
    else:
        mid = 0.0
    h1 = _mean([v for it, v in pts if (it.start + it.end) / 2 < mid])
    h2 = _mean([v for it, v in pts if (it.start + it.end) / 2 >= mid])
    who = f" of {main}" if main else ""
    lines.append(f"{dim}{who}, first half of the window (before {format_time(mid)}): mean {_f(h1)}")
    lines.append(f"{dim}{who}, second half: mean {_f(h2)}")
    if h1 is not None and h2 is not None:
        d = h2 - h1
        thr = float(ctx.params.trend_threshold)
        small = abs(d) < thr
        opts = [("rising (" + ("the value went up" if d > 0 and not small else "not this") + ")", "rising"),
                ("falling (" + ("the value went down" if d < 0 and not small else "not this") + ")", "falling"),
                ("none (" + ("change below the threshold" if small else "not this") + ")", "none")]
        lines.append(f"second minus first = {d:+.2f}: {dim} went {'up' if d > 0 else 'down'}"
                     + (f", but by less than the {thr:.2f} change threshold (no real change)" if abs(d) < thr
                        else f" (beyond the {thr:.2f} change threshold)"))
    else:
        lines.append("not enough labelled segments in both halves to see a change")
    if intent.polarity < 0:
        lines.append(f"the question asks about the LOW pole of {dim} (rising calmness = falling {dim})")
    return lines, opts


def _digest_pair(ctx, sets, intent: Intent) -> tuple[list[str], list[tuple[str, str]]]:
    """Mean of the dimension (or the aesthetic score) per role A / B; the higher and lower role."""
    lines: list[str] = []
    opts: list[tuple[str, str]] = []
    t = intent.task
    song = t != "comparison"
    dim = "overall aesthetic score" if song else dimension_in(ctx.query.text, "arousal")
    val = aesthetic if song else (lambda lab: dim_value(lab, dim))
    role = "song" if song else "speaker"
    means = {}
    for r, (s, items) in zip(("A", "B"), sets[:2]):
        vs = [v for v in (val(it.labels) for it in items) if v is not None]
        means[r] = _mean(vs)
        lines.append(f"Set {s.index} = {role} {r} ({s.localize}): mean {dim} {_f(means[r])} over {len(vs)} segments")
    if means.get("A") is not None and means.get("B") is not None:
        d = means["A"] - means["B"]
        extra = ""
        if song:
            tie = float(ctx.params.tie_delta)
            extra = (f" (less than the {tie:.2f} tie threshold: a tie)" if abs(d) < tie
                     else f" (beyond the {tie:.2f} tie threshold)")
        hi_r, lo_r = ("A", "B") if d > 0 else ("B", "A")
        opts = [(f"{hi_r} (the higher {dim})", hi_r), (f"{lo_r} (the lower {dim})", lo_r)]
        if song and abs(d) < float(ctx.params.tie_delta):
            opts = [("tie (the difference is below the tie threshold)", "tie")] + opts
        lines.append(f"A minus B = {d:+.2f}{extra}: higher {dim}: {role} {hi_r}; lower {dim}: {role} {lo_r}")
    if intent.polarity < 0:
        lines.append(f"the question asks for the LOWER / worse {role}")
    return lines, opts


def _digest_locate(ctx, sets, intent: Intent) -> tuple[list[str], list[tuple[str, str]]]:
    """The reference clip's emotion and each candidate's label; matching candidates first."""
    lines: list[str] = []
    opts: list[tuple[str, str]] = []
    cands: list = []
    target = reference_label(ctx, "E")
    lines.append(f"emotion of the reference clip E: {target or 'unknown'}")
    for _, items in sets:
        for it in items:
            e = emotion_of(str(it.labels.get("primary"))) if it.labels.get("primary") else None
            mt = format_time((it.start + it.end) / 2)
            same = target is not None and e == target
            lines.append(f"candidate {mt}: label {e or 'none'}" + (" (matches E)" if same else ""))
            ans = f"{mt} ({target or e or 'Neutral'})"
            cands.append((not same, it.start, (f"{ans} " + ("matches E" if same else f"label {e or 'none'}"), ans)))
    opts = [c[2] for c in sorted(cands)]
    return lines, opts


def _digest_exhibited(ctx, sets, intent: Intent) -> tuple[list[str], list[tuple[str, str]]]:
    """Coughs and respiratory events counted in the evidence; Yes / No."""
    lines: list[str] = []
    opts: list[tuple[str, str]] = []
    n, ev, k = 0, set(), 0
    for _, items in sets:
        for it in items:
            c = it.labels.get("cough_count")
            c = c if isinstance(c, int) else 0
            e = [x for x in (it.labels.get("events") or []) if x in ("cough", "sneeze", "throat_clear")]
            n += c
            ev.update(e)
            k += 1 if (c or e) else 0
    lines.append(f"coughs counted in the evidence: {n}; respiratory events: {', '.join(sorted(ev)) or 'none'}; "
                 f"segments with a cough or event: {k}")
    opts = _yes_no(k > 0, "a cough or respiratory sound is heard", intent)
    return lines, opts


def _digest_reported(ctx, sets, intent: Intent) -> tuple[list[str], list[tuple[str, str]]]:
    """Segments mentioning a respiratory symptom (not negated); Yes / No."""
    lines: list[str] = []
    opts: list[tuple[str, str]] = []
    said, neg = [], 0
    for _, items in sets:
        for it in items:
            what, negated = _mention(it)
            if what and not negated:
                said.append(f"{format_time(it.start)} {it.speaker or ''} {what}".replace("  ", " "))
            elif what:
                neg += 1
    lines.append(f"segments mentioning a respiratory symptom (not negated, not a question): {len(said)}"
                 + (f" ({'; '.join(said[:4])})" if said else ""))
    lines.append(f"negated or asked-about mentions: {neg}")
    opts = _yes_no(bool(said), "a respiratory symptom is reported", intent)
    return lines, opts


#: The digest of each task: ``(ctx, visible sets, intent) -> (fact lines, options)``.
_DIGESTS = {
    "state": _digest_state,
    "change": _digest_change,
    "comparison": _digest_pair,
    "time": _digest_pair,
    "position": _digest_pair,
    "audio": _digest_pair,
    "locate": _digest_locate,
    "locate_hard": _digest_locate,
    "exhibited": _digest_exhibited,
    "reported": _digest_reported,
}


def _yes_no(found: bool, what: str, intent: Intent) -> list[tuple[str, str]]:
    """Yes/No options annotated with whether ``what`` was found (absence questions flip them)."""
    if intent.absence:                      # "was the visit free of coughing?": Yes = absent
        return [("Yes (none found: absent)" if not found else "Yes (not this)", "Yes"),
                (f"No (found: {what})" if found else "No (not this)", "No")]
    return [(f"Yes ({what})" if found else "Yes (not this)", "Yes"),
            ("No (nothing found)" if not found else "No (not this)", "No")]


def segment_list(ctx, evidence, per_set: int = 6) -> str:
    """One line per evidence set: its window and the time ranges (+ speaker, where the setup shows
    metadata) of its first ``per_set`` segments — what the text answerer cites."""
    out = []
    for s in evidence.sets:
        bits = [fmt_range(it.start, it.end) + (f" {it.speaker}" if ctx.setup.show_metadata and it.speaker else "")
                for it in s.items[:per_set]]
        more = f" (+{len(s.items) - per_set} more)" if len(s.items) > per_set else ""
        out.append(f"Set {s.index} ({s.localize}): " + (", ".join(bits) + more if bits else "no segments"))
    return "\n".join(out) or "no evidence retrieved"


def evidence_source(ctx) -> str:
    """What the facts are computed from, per setup: the index metadata (A1-A3), what the offline
    labelers heard in the attached clips (A4/A6: :data:`~harp_lib.agent.heard.HEARD_HEADER`), or both
    fused (A5/A7)."""
    if not ctx.setup.attach_audio:
        return "Labels: the recording's metadata (speaker ids, transcripts, automatic index labels)."
    if not ctx.setup.show_metadata:
        return HEARD_HEADER + "."
    return HEARD_HEADER + ", fused with the recording's metadata labels (speaker ids, transcripts, index labels)."
