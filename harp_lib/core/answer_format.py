"""The answer format: how answers and rationales are written and read back.

One module for both directions, so the answerer, the judges and the human-study scorer agree:

* writing -- :func:`fmt_range` (the citation ``[12.4s–17.1s]``) and :func:`render_labels`
  (``primary=Happy, V=0.60``) used by the evidence text and the rule answerer's rationales;
* splitting -- :func:`split_rationale`, the one splitter of model output at ``Rationale:``;
* reading -- decisions, times, labels and citations out of answer and rationale text, so a
  human's "1:05" and a model's "65 s" are read by the same code.  Everything here is
  deterministic string processing over the shared vocabulary of :mod:`harp_lib.core.labels`.

>>> emotions_in("She sounds happy, not angry")
['Happy']
>>> choice_in("Set 2 is better")
'B'
>>> [c.span for c in times_in("at [12.4s–17.1s] and at 1:05")]
[(12.4, 17.1), (65.0, 65.0)]
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from harp_lib.core.labels import (DIRECTIONS, EMOTION_SYNONYMS, LabelError, cough_count, cough_label,
                      normalize_direction, normalize_label)
from harp_lib.core.labels import _DIRECTION_SYNONYMS  # the direction vocabulary (no public accessor yet)

__all__ = ["split_rationale", "split_answer", "fmt_range", "render_labels", "emotions_in", "direction_in", "choice_in", "yes_no_in", "TimeCitation",
           "times_in", "parse_clock", "LabelCitation", "labels_in", "speakers_in", "Citations",
           "citations_in", "cough_present", "LABEL_KEYS", "HEDGE_WORDS"]

_NEG = {"not", "no", "never", "isn't", "wasn't", "aren't", "weren't", "nor", "without", "neither",
        "lacks", "lacking", "rather", "instead"}
#: Synonyms too ambiguous to read as an emotion in free prose ("calmed down", "the content").
_AMBIGUOUS_EMOTION_WORDS = {"down", "content", "flat", "up", "mad"}
#: Words that make an A/B answer count as "about equal" when the ground truth is a tie.
HEDGE_WORDS = ("marginally", "slightly", "barely", "about the same", "roughly equal", "very close",
               "similar", "comparable", "nearly identical")


def split_rationale(answer: str, rationale: str = "") -> tuple[str, str]:
    """Split ``answer`` once at the first ``Rationale:`` (case-insensitive, a whole word), as the
    paper does: ``(decision, rationale)``.  A separate ``rationale`` is appended to the tail.

    Text with nothing before ``Rationale:`` has no decision: the decision is empty (the judges
    grade it as an empty answer) and the text is the rationale, so a model that only explains
    is not credited with an answer.

    >>> split_rationale("Happy. Rationale: [1.0s–2.0s] primary=Happy")
    ('Happy.', '[1.0s–2.0s] primary=Happy')
    >>> split_rationale("Rationale: only this")
    ('', 'only this')
    >>> split_rationale("B", "Set 2 scores higher")
    ('B', 'Set 2 scores higher')
    """
    m = re.search(r"\brationale\s*:", answer or "", flags=re.I)
    if m:
        head, tail = answer[:m.start()].strip(), answer[m.end():].strip()
        return head, (tail + ("\n" + rationale if rationale else "")).strip()
    return (answer or "").strip(), (rationale or "").strip()


#: The former name in :mod:`harp_lib.evaluate.answers` (the same function).
split_answer = split_rationale


# ----------------------------------------------------------------------------- writing
_AVD = (("valence", "V"), ("arousal", "A"), ("dominance", "D"))


def fmt_range(start: float, end: float) -> str:
    """``[12.4s–17.1s]``, the citation format shared by evidence, answers and judges.

    >>> fmt_range(12.43, 17.08)
    '[12.4s–17.1s]'
    """
    e = "end" if math.isinf(end) else f"{end:.1f}s"
    return f"[{start:.1f}s–{e}]"


def _num(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def render_labels(labels: Mapping[str, Any]) -> str:
    """Every label key on one line: primary first, scores as ``[k=v]``, A/V/D as ``V=..``.

    >>> render_labels({"primary": "2 cough", "cough_count": 2, "events": ["cough"]})
    'primary=2 cough, cough_count=2, events=[cough]'
    >>> render_labels({"valence": {"mean": 0.6, "std": 0.1}, "arousal": 0.4})
    'V=0.60±0.10, A=0.40'
    """
    parts = []
    if labels.get("primary") is not None:
        parts.append(f"primary={labels['primary']}")
    for k in sorted(labels):
        if k in ("primary", "scores") or k in dict(_AVD):
            continue
        v = labels[k]
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            parts.append(f"{k}=[{', '.join(_num(x) for x in v)}]")
        elif isinstance(v, Mapping):
            parts.append(f"{k}=[{', '.join(f'{a}={_num(b)}' for a, b in v.items())}]")
        else:
            parts.append(f"{k}={_num(v)}")
    sc = labels.get("scores")
    if isinstance(sc, Mapping) and sc:
        parts.append("scores=[" + ", ".join(f"{k}={_num(v)}" for k, v in
                                           sorted(sc.items(), key=lambda kv: (-_f(kv[1]), kv[0]))) + "]")
    for key, short in _AVD:
        v = labels.get(key)
        if isinstance(v, Mapping) and "mean" in v:
            std = v.get("std")
            parts.append(f"{short}={_num(float(v['mean']))}" + (f"±{_num(float(std))}" if std is not None else ""))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            parts.append(f"{short}={_num(float(v))}")
    return ", ".join(parts)


# ----------------------------------------------------------------------------- reading
def _phrase_re(phrases) -> re.Pattern:
    alts = sorted({p.lower() for p in phrases}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(re.escape(a) for a in alts) + r")(?![\w-])", re.I)


_EMO_LOOKUP = {}
for _name, _syns in EMOTION_SYNONYMS.items():
    for _s in (_name.lower(), *_syns):
        if _s not in _AMBIGUOUS_EMOTION_WORDS:
            _EMO_LOOKUP[_s] = _name
_EMO_RE = _phrase_re(_EMO_LOOKUP)
_DIR_LOOKUP = {s: d for d, syns in _DIRECTION_SYNONYMS.items() for s in syns}
_DIR_RE = _phrase_re(_DIR_LOOKUP)


def _negated(text: str, start: int, window: int = 3) -> bool:
    words = re.findall(r"[\w']+", text[:start].lower())[-window:]
    # a clause break resets negation: "not sad; happy"
    tail = text[max(0, start - 40):start]
    if re.search(r"[;.!?]|\bbut\b", tail):
        cut = max(tail.rfind(";"), tail.rfind("."), tail.rfind("!"), tail.rfind("?"),
                  tail.lower().rfind(" but "))
        words = re.findall(r"[\w']+", tail[cut + 1:].lower())[-window:]
    return any(w in _NEG for w in words)


def emotions_in(text: str, *, with_negated: bool = False) -> list:
    """Emotion classes named in ``text`` (names or synonyms), in order, without repeats.

    Negated mentions ("not angry") are left out, or returned as ``(name, True)`` pairs with
    ``with_negated=True``.

    >>> emotions_in("Joyful at first, then no longer sad")
    ['Happy']
    >>> emotions_in("not angry", with_negated=True)
    [('Angry', True)]
    """
    out, seen = [], set()
    for m in _EMO_RE.finditer(text or ""):
        name = _EMO_LOOKUP[m.group(1).lower()]
        neg = _negated(text, m.start()) and m.group(1).lower() != "no emotion"
        key = (name, neg) if with_negated else name
        if (not with_negated and neg) or key in seen:
            continue
        seen.add(key)
        out.append(key)
    return out


def direction_in(text: str) -> Optional[str]:
    """The first change direction named in ``text`` (rising / falling / none), or None.

    >>> direction_in("Valence goes up over the window"), direction_in("it stayed the same")
    ('rising', 'none')
    """
    for m in _DIR_RE.finditer(text or ""):
        d = normalize_direction(m.group(1))
        if d in DIRECTIONS:
            return d
    return None


_CHOICE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\b(?i:speaker|song|snippet|clip|set|option|choice|track|item)\s*\(?([AB])\)?(?![\w])", "AB"),
    (r"\b(?:set|song|speaker|option|track)\s*(?:#|no\.?\s*)?([12])\b", "12"),
    (r"\b(first|former)\s+(?:song|speaker|one|set|clip|snippet|track|option)\b|^\W*(first|former)\b",
     "first"),
    (r"\b(second|latter)\s+(?:song|speaker|one|set|clip|snippet|track|option)\b|^\W*(second|latter)\b",
     "second"),
    (r"\b(tie|tied|equal|equally|same quality|neither|no difference|draw)\b", "tie"),
)
_LEAD_LETTER = re.compile(r"^[\s\W]*\(?([AB])\)?(?=$|[\s.,;:!)\]\-–—])")
_ARTICLE_NEXT = re.compile(r"^\s+(?!is\b|was\b|has\b|had\b|wins\b|sounds\b|scores\b|rates\b|seems\b|"
                           r"appears\b|speaks\b|shows\b|and\b|or\b|\(|[-–—])[a-z]")


def choice_in(text: str) -> Optional[str]:
    """An A/B/tie decision: "A", "Speaker B", "Set 1", "the first song", "tie" ... -> A/B/tie.

    The earliest non-negated mention wins.  A leading bare "A" followed by a noun ("A clear
    rise") is read as an article, not a choice.

    >>> choice_in("B"), choice_in("The first song (A) is better"), choice_in("A tie")
    ('B', 'A', 'tie')
    >>> choice_in("Not Speaker A; Speaker B has higher arousal")
    'B'
    """
    text = text or ""
    found: list[tuple[int, str]] = []
    m = _LEAD_LETTER.match(text)
    if m and not (m.group(1) == "A" and _ARTICLE_NEXT.match(text[m.end():])):
        found.append((m.start(1), m.group(1)))
    for pat, kind in _CHOICE_PATTERNS:
        for m in re.finditer(pat, text, flags=re.I if kind != "AB" else 0):
            if kind != "tie" and _negated(text, m.start(), window=2):
                continue
            g = next(x for x in m.groups() if x)
            val = {"AB": g.upper(), "12": "A" if g == "1" else "B", "first": "A", "second": "B",
                   "tie": "tie"}[kind]
            found.append((m.start(), val))
    if not found:
        # case-insensitive "speaker a" etc.
        for m in re.finditer(r"\b(?:speaker|song|snippet|set|option)\s+([ab])\b", text, flags=re.I):
            if not _negated(text, m.start(), window=2):
                found.append((m.start(), m.group(1).upper()))
    return min(found)[1] if found else None


def yes_no_in(text: str) -> Optional[str]:
    """The first Yes / No decision in ``text``.

    >>> yes_no_in("No. The patient never coughs"), yes_no_in("**Yes**, she reports a cough")
    ('No', 'Yes')
    """
    m = re.search(r"\b(yes|no|yeah|yep|nope)\b", text or "", flags=re.I)
    if not m:
        return None
    return "Yes" if m.group(1).lower() in ("yes", "yeah", "yep") else "No"


# ---------------------------------------------------------------------------------------
# times
# ---------------------------------------------------------------------------------------
_CLOCK = r"(?:\d{1,2}:)?\d{1,3}:\d{2}(?:\.\d+)?"
_NUM = r"\d+(?:\.\d+)?"
_SEC = r"(?:s|sec|secs|seconds?)(?![a-z])"
_MIN = r"(?:m|min|mins|minutes?)(?![a-z])"
_RANGE_RE = re.compile(
    rf"(?P<btw>(?:between|from)\s+)?(?P<a>{_CLOCK}|{_NUM})\s*(?P<ua>{_SEC})?\s*(?P<sep>–|—|-|to|until|and)\s*"
    rf"(?P<b>{_CLOCK}|{_NUM})\s*(?P<ub>{_SEC})?",
    re.I)
_MINSEC_RE = re.compile(rf"(?P<m>{_NUM})\s*{_MIN}\s*(?:and\s+)?(?:(?P<s>{_NUM})\s*{_SEC})?", re.I)
_POINT_RE = re.compile(rf"(?P<c>{_CLOCK})|(?P<n>{_NUM})\s*{_SEC}", re.I)


def parse_clock(s: str) -> float:
    """``m:ss`` / ``h:mm:ss`` / seconds -> seconds.

    >>> parse_clock("1:05"), parse_clock("1:00:02.5"), parse_clock("12.4")
    (65.0, 3602.5, 12.4)
    """
    parts = s.strip().split(":")
    v = 0.0
    for p in parts:
        v = v * 60 + float(p)
    return round(v, 3)


@dataclass(frozen=True)
class TimeCitation:
    """A time or time range cited in text: ``start``/``end`` seconds (equal for a point)."""
    start: float
    end: float
    pos: int
    end_pos: int
    text: str
    is_range: bool

    @property
    def span(self) -> tuple[float, float]:
        return (self.start, self.end)

    @property
    def middle(self) -> float:
        return round((self.start + self.end) / 2, 3)


def times_in(text: str) -> list[TimeCitation]:
    """Every time (``65 s``, ``1:05``, ``2 min 5 s``) and range (``[12.4s–17.1s]``, ``1:02-1:10``)
    cited in ``text``, in order.  Bare numbers without a unit are not times (``A=0.62``).

    >>> [c.span for c in times_in("between 40 and 95 seconds? no: 40-95 s, then 2 min 5 s")]
    [(40.0, 95.0), (40.0, 95.0), (125.0, 125.0)]
    """
    text = text or ""
    out: list[TimeCitation] = []
    taken = [False] * len(text)

    def free(a, b):
        return not any(taken[a:b])

    def take(a, b):
        for i in range(a, b):
            taken[i] = True

    for m in _RANGE_RE.finditer(text):
        a, b = m.group("a"), m.group("b")
        clock_a, clock_b = ":" in a, ":" in b
        unit = bool(m.group("ua") or m.group("ub"))
        if m.group("sep").lower() == "and" and not m.group("btw"):
            continue
        if not ((clock_a and clock_b) or (clock_a and unit) or (clock_b and unit) or (unit and m.group("ub"))):
            continue
        # a minus sign in "A=0.62-0.70" style values is not a time range: require the unit
        # (or clocks) and no '=' right before
        if text[max(0, m.start() - 1):m.start()] in ("=", "."):
            continue
        s, e = parse_clock(a), parse_clock(b)
        if e < s:
            continue
        out.append(TimeCitation(s, e, m.start("a"), m.end(), m.group(0), True))
        take(m.start(), m.end())
    for m in _MINSEC_RE.finditer(text):
        if not free(m.start(), m.end()):
            continue
        v = float(m.group("m")) * 60 + (float(m.group("s")) if m.group("s") else 0.0)
        out.append(TimeCitation(round(v, 3), round(v, 3), m.start(), m.end(), m.group(0), False))
        take(m.start(), m.end())
    for m in _POINT_RE.finditer(text):
        if not free(m.start(), m.end()):
            continue
        if text[max(0, m.start() - 1):m.start()] == ".":
            continue
        v = parse_clock(m.group("c")) if m.group("c") else float(m.group("n"))
        out.append(TimeCitation(round(v, 3), round(v, 3), m.start(), m.end(), m.group(0), False))
        take(m.start(), m.end())
    return sorted(out, key=lambda c: c.pos)


# ---------------------------------------------------------------------------------------
# labels and speakers cited
# ---------------------------------------------------------------------------------------
#: Label keys read as categorical label citations (``primary=Happy``, ``tier=High``).
LABEL_KEYS = ("primary", "label", "emotion", "tier", "quality", "cough")
_KV_RE = re.compile(r"\b(?P<k>" + "|".join(LABEL_KEYS) + r")\s*[=:]\s*(?P<v>\"[^\"]+\"|'[^']+'|"
                    r"no\s+coughs?|\d+\s+coughs?|[A-Za-z][\w-]*)"
                    r"|\bcough_count\s*[=:]\s*(?P<n>\d+)", re.I)
_COUGH_RE = re.compile(r"\b(no|\d+)\s+coughs?\b", re.I)
_SPEAKER_RE = re.compile(r"\b(SPEAKER_\w+|SONG_\d+)\b")


@dataclass(frozen=True)
class LabelCitation:
    """A categorical label cited in text, normalised to the shared vocabulary when possible."""
    key: str
    value: str
    pos: int
    raw: str


def _norm(domain: Optional[str], key: str, value: str) -> str:
    v = value.strip().strip("\"'")
    doms = [domain] if domain else ["emotion", "song", "clinical"]
    for d in doms:
        try:
            out = normalize_label(d, v, strict=False)
        except LabelError:
            out = None
        if out:
            return out
    return v


def labels_in(text: str, domain: Optional[str] = None) -> list[LabelCitation]:
    """Categorical labels cited as ``key=value`` (keys :data:`LABEL_KEYS`) or as cough labels
    ("no cough", "2 coughs", "cough_count=2"), normalised with
    :func:`harp_lib.core.labels.normalize_label`.

    >>> [(c.key, c.value) for c in labels_in("[1.0s–2.0s] primary=happy; 2 coughs; cough_count=0", "emotion")]
    [('primary', 'Happy'), ('cough', '2 cough'), ('cough', 'no cough')]
    """
    text = text or ""
    out: list[LabelCitation] = []
    used = []
    for m in _KV_RE.finditer(text):
        if m.group("n") is not None:
            out.append(LabelCitation("cough", cough_label(int(m.group("n"))), m.start(), m.group(0)))
            used.append((m.start(), m.end()))
            continue
        key = m.group("k").lower()
        raw = m.group("v")
        if _COUGH_RE.fullmatch(raw.strip()) or key == "cough":
            try:
                val = normalize_label("clinical", raw.strip().strip("\"'"))
            except LabelError:
                val = raw.strip()
            out.append(LabelCitation("cough", val, m.start(), m.group(0)))
        else:
            out.append(LabelCitation(key, _norm(domain, key, raw), m.start(), m.group(0)))
        used.append((m.start(), m.end()))
    for m in _COUGH_RE.finditer(text):
        if any(a <= m.start() < b for a, b in used):
            continue
        try:
            val = normalize_label("clinical", m.group(0))
        except LabelError:
            continue
        out.append(LabelCitation("cough", val, m.start(), m.group(0)))
    return sorted(out, key=lambda c: c.pos)


def speakers_in(text: str) -> list[str]:
    """Speaker / song ids cited (``SPEAKER_01``, ``SONG_03``), in order, without repeats."""
    return list(dict.fromkeys(_SPEAKER_RE.findall(text or "")))


@dataclass(frozen=True)
class Citations:
    """What a text cites: times, labels (each with the time it is attached to) and speakers."""
    times: tuple[TimeCitation, ...] = ()
    labels: tuple[tuple[LabelCitation, Optional[TimeCitation]], ...] = ()
    speakers: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.times or self.labels or self.speakers)


def citations_in(text: str, domain: Optional[str] = None) -> Citations:
    """Times, labels and speakers cited in ``text``; a label is attached to the nearest time
    cited before it in the same sentence/line (the evidence renderer writes the time first).

    >>> c = citations_in("[10.0s–15.0s] SPEAKER_1 primary=Sad. Later primary=Happy", "emotion")
    >>> [(l.value, t.span if t else None) for l, t in c.labels]
    [('Sad', (10.0, 15.0)), ('Happy', None)]
    """
    text = text or ""
    times = times_in(text)
    labs = []
    for lab in labels_in(text, domain):
        anchor = None
        for t in times:
            if t.end_pos <= lab.pos and not re.search(r"[.\n;](\s|$)", text[t.end_pos:lab.pos]):
                anchor = t
        labs.append((lab, anchor))
    return Citations(tuple(times), tuple(labs), tuple(speakers_in(text)))


def cough_present(label: str) -> Optional[bool]:
    """True for "n cough" (n > 0), False for "no cough", None when not a cough label."""
    try:
        return cough_count(label) > 0
    except LabelError:
        return None

