"""Binding a paraphrase to a benchmark query: the row's text filled with the query's facts (its
window, dimension, topic, quote, song positions and times, as clock / second / spoken / written-out
forms: :func:`_slots`) and the query's ground truth transformed as the row says (:func:`bind`:
winner swapped for lower / worse and song-B-first rows, direction flipped for low-pole change
rows, yes/no flipped for absence rows).

>>> spoken(90), spoken(270), spoken(30), spoken(47)
('a minute and a half', 'four and a half minutes', 'half a minute', '47 seconds')
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Optional

from harp_lib.core.timespan import ordinal

__all__ = ["bind", "spoken", "number_words", "mark"]

_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_ORDW = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
         "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth",
         "eighteenth", "nineteenth", "twentieth")
_DIM_WORDS = {   # dim -> (noun of the high pole, noun of the low pole, "more" adj, low-pole adj, "less" adj, plain adj)
    "valence": ("positivity", "negativity", "more positive", "sadder", "less positive", "positive"),
    "arousal": ("energy", "calmness", "more energetic", "calmer", "less energetic", "energetic"),
    "dominance": ("assertiveness", "submissiveness", "more dominant", "more submissive", "less dominant",
                  "dominant"),
}

def spoken(t: float) -> str:
    """A time as people say it: 'a minute and a half', 'four and a half minutes', else seconds."""
    t = float(t)
    if t % 30 or t <= 0 or t >= 21 * 60:
        return f"{t:g} seconds"
    m, r = divmod(int(t), 60)
    if m == 0:
        return "half a minute"
    if r == 0:
        return "one minute" if m == 1 else f"{_WORDS[m]} minutes"
    return "a minute and a half" if m == 1 else f"{_WORDS[m]} and a half minutes"


def _clock(t: float) -> str:
    t = int(round(t))
    return f"{t // 60}:{t % 60:02d}"


def _ordinal(n: int) -> str:
    return ordinal(n)


_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def number_words(n: int) -> str:
    """A whole number as people write it out, hyphenated: 97 -> 'ninety-seven'.

    >>> number_words(97), number_words(16), number_words(412)
    ('ninety-seven', 'sixteen', 'four hundred and twelve')
    """
    n = int(n)
    if n < 0 or n > 9999:
        return str(n)
    if n >= 100:
        h, r = divmod(n, 100)
        return f"{number_words(h)} hundred" + (f" and {number_words(r)}" if r else "")
    if n <= 20:
        return _WORDS[n]
    t, u = divmod(n, 10)
    return _TENS[t] + (f"-{_WORDS[u]}" if u else "")


def mark(t: float) -> str:
    """A time as a hyphenated '...-minute mark' phrase, to the half minute: 990 -> 'sixteen-and-a-half-minute'.

    >>> mark(990), mark(60), mark(30), mark(96.8)
    ('sixteen-and-a-half-minute', 'one-minute', 'thirty-second', 'one-and-a-half-minute')
    """
    half = max(1, int(round(float(t) / 30)))
    m, r = divmod(half, 2)
    if m == 0:
        return "thirty-second"
    return "-".join(number_words(m).split()) + ("-and-a-half" if r else "") + "-minute"


def _edge(n: int, n_songs: Optional[int], first: str, last: str) -> str:
    """'opening' / 'closing' (or the given words) for the first / last song, else the ordinal word."""
    if n == 1:
        return first
    if n_songs and n == n_songs:
        return last
    return _ORDW[n] if n < len(_ORDW) else _ordinal(n)


def _slots(q, rec=None) -> dict[str, Any]:
    """The facts of a benchmark query a paraphrase may name (its window, dimension, songs...).
    ``rec``: the query's Recording (its song count for 'the closing track' / 'the last one', its
    duration for the consultation window of a one-consultation recording)."""
    gt, cu = q.ground_truth or {}, q.custom or {}
    n_songs = (getattr(rec, "custom", None) or {}).get("n_songs")
    out: dict[str, Any] = {"topic": cu.get("topic", ""), "quote": cu.get("quote", "")}
    if q.query_type in ("reported", "exhibited") and (("t0" in gt and "t1" in gt) or rec is not None):
        c0, c1 = ((math.floor(float(gt["t0"])), math.ceil(float(gt["t1"]))) if "t1" in gt
                  else (0, math.ceil(float(rec.duration))))
        out.update(c0_clock=_clock(c0), c1_clock=_clock(c1), c0=c0, c1=c1)
    if q.query_type == "state" and q.time_ref is not None:
        t = float(q.time_ref)
        out.update(t_clock=_clock(t), t_sec=int(round(t)), t_spoken=spoken(round(t / 30) * 30 or 30),
                   t_mark=mark(t), t_sec_words=number_words(int(round(t))))
    if q.query_type in ("change", "comparison"):
        t0, t1 = math.floor(float(gt["t0"])), math.ceil(float(gt["t1"]))
        dim = gt["dimension"]
        hi, lo, more, lowpole, less, plain = _DIM_WORDS[dim]
        out.update(t0=t0, t1=t1, t0_clock=_clock(t0), t1_clock=_clock(t1), t0_words=number_words(t0),
                   t1_words=number_words(t1), dim=dim, dim_noun=hi,
                   dim_low_noun=lo, more_adj=more, less_pole_adj=lowpole, less_adj=less, plain_adj=plain)
    if q.query_type in ("locate", "locate_hard"):
        w0, w1 = cu.get("window") or (gt.get("t0"), gt.get("t1"))
        w0, w1 = math.floor(float(w0)), math.ceil(float(w1))
        out.update(w0=w0, w1=w1, w0_clock=_clock(w0), w1_clock=_clock(w1), w0_words=number_words(w0),
                   w1_words=number_words(w1))
    for role in ("a", "b"):
        info = cu.get(f"song_{role}") or {}
        if "index" in info:
            n, t = int(info["index"]), float(info.get("time_ref") or 0.0)
            out.update({f"{role}_n": n, f"{role}_ord": _ordinal(n), f"{role}_word": _ORDW[n] if n < len(_ORDW) else _ordinal(n),
                        f"{role}_clock": _clock(t), f"{role}_sec": int(round(t)), f"{role}_min": f"{t / 60:g}",
                        f"{role}_spoken": spoken(t), f"{role}_mark": mark(t),
                        f"{role}_edge": _edge(n, n_songs, "opening", "closing"),
                        f"{role}_end": _edge(n, n_songs, "first", "last")})
    return out


def _swap(w: str) -> str:
    return {"A": "B", "B": "A"}.get(w, w)


def _consultations(q, queries_by_type: dict[str, list]) -> int:
    """How many consultations the benchmark's clinical queries name in ``q``'s recording."""
    return len({(x.custom or {}).get("consultation") for t in ("reported", "exhibited")
                for x in queries_by_type.get(t, ()) if x.recording_id == q.recording_id})


def bind(row: dict, queries_by_type: dict[str, list], recordings: Optional[dict] = None):
    """``(query, base)``: the paraphrase as a Query bound to the ``n``-th benchmark query of its
    task, with the ground truth transformed as the row says; ``None`` when the benchmark has no
    query of that task, or when a clinical row names no consultation window and the bound query's
    recording holds several consultations (a session: "did the patient cough during the visit?"
    has no one answer there; the template names the consultation).  ``recordings``: recording id -> Recording, so that ``{a_edge}`` says
    'opening' / 'closing' and ``{a_end}`` 'first' / 'last' where true (``custom['n_songs']``) and
    ``{c0_clock}``-``{c1_clock}`` is the whole recording where it is one consultation."""
    base_list = queries_by_type.get(row["task"]) or []
    if not base_list:
        return None
    base = base_list[int(row["n"]) % len(base_list)]
    if row["task"] in ("reported", "exhibited") and "{c0_clock}" not in row["text"] \
            and row.get("expect") != "unsupported" and _consultations(base, queries_by_type) > 1:
        return None         # "did the patient cough during the visit?" on a session of many visits: no one answer
    try:
        text = row["text"].format(**_slots(base, (recordings or {}).get(base.recording_id)))
    except KeyError as e:
        raise ValueError(f"paraphrase {row['id']}: slot {e} is not known for a {row['task']} query") from None
    gt = dict(base.ground_truth or {})
    flip = (row.get("polarity", 1) < 0) != bool(row.get("swap"))
    if "winner" in gt and flip:
        gt["winner"] = _swap(str(gt["winner"]))
    if "direction" in gt and row.get("polarity", 1) < 0:
        gt["direction"] = {"rising": "falling", "falling": "rising"}.get(gt["direction"], gt["direction"])
    if "answer" in gt and row.get("absence"):
        gt["answer"] = {"Yes": "No", "No": "Yes"}.get(gt["answer"], gt["answer"])
    q = replace(base, query_id=f"{base.query_id}.{row['id']}", text=text, ground_truth=gt)
    return q, base
