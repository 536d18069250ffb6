"""Questions about your own recordings, in a user's words, graded against the references (issue 40).

``harp_lib/data/own_questions.jsonl`` holds hand-written questions about three real recordings
(:mod:`harp_lib.evaluate.own_recordings`: the pyannote sample call, the call between two lines of
a third voice, a four-track real-music medley), one per line::

    {"id": "o014", "recording": "call", "kind": "speaker_at", "half": "eval",
     "question": "Who is speaking at 0:24?", "truth": {"speaker": "sheila"}}

``kind`` is the stratum (the question kind it tests; ``unanswerable`` for questions no kind should
answer); ``half`` is the fixed tune / eval split of :func:`harp_lib.evaluate.paraphrase_set.split_rows`
(sha256 of the id within each kind, alternating), so it never depends on a result.  ``truth`` was
written from the references (sample.rttm / sample.stm, the mix and medley layouts), never from an
answer, in one of these forms (``any_of`` joins several):

* ``{"count": 3}`` -- the answer's value (or first whole number in its text);
* ``{"time": [[lo, hi], ...], "tol": 0.75, "field": "start"}`` -- every time the answer gives (its
  value: seconds, or the ``field`` of a dict value; else the times in its text) lies in one window
  widened by ``tol``;
* ``{"length": 71.6, "tol": 5}`` -- a duration (a dict value's ``length``, else seconds in the text);
* ``{"speaker": "sheila"}`` -- the one diarized label answered is the one whose segments overlap
  that reference speaker's turns most (:func:`speaker_map`);
* ``{"words": [...], "not": [...]}`` -- any of the words or phrases is in the answer
  (case-insensitive) and none of the ``not`` ones (words said elsewhere in the recording: a
  transcript of everything is not what is said at T);
* ``{"yes": false}`` -- a yes / no answer (a bool value, else the text's first word);
* ``{"song": [3, 4]}`` -- the song answered (an int value, a dict value's ``song``, else "song N");
* ``{"refuse": true, "hint": "clinical"}`` -- "cannot answer this" / "unsupported question", its
  rationale naming ``hint`` when given.

:func:`grade` puts each answer in one of ``right`` (answered as the truth says), ``refused_properly``
(a refusal the truth asks for; counted as right), ``wrong`` (an answer the truth does not accept,
including an answer to a question the truth refuses), ``refused_wrongly`` (a refusal of a question the
truth answers, or a refusal without the hint the truth asks for) or ``error`` (``harp ask`` failed).

>>> grade({"answer": "0:14 (14.4 s)", "value": 14.4}, {"time": [[14.444, 17.769]], "tol": 1.0})
'right'
>>> grade({"answer": "cannot answer this", "rationale": "cannot answer this: ..."}, {"count": 2})
'refused_wrongly'
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from harp_lib.core.atomic import part_path
from harp_lib.evaluate.paraphrase_set import data_rows, split_rows

__all__ = ["VERDICTS", "load_own_questions", "load_held_out", "report_set", "is_refusal", "grade", "speaker_map", "summarize", "write_tables"]

VERDICTS = ("right", "refused_properly", "wrong", "refused_wrongly", "error")
RECORDINGS = ("call", "three", "medley")
_TRUTH_KEYS = ("count", "time", "length", "speaker", "words", "yes", "song", "refuse", "any_of")


def _check_truth(t: Any, where: str) -> None:
    if not isinstance(t, dict) or not any(k in t for k in _TRUTH_KEYS):
        raise ValueError(f"{where}: truth {t!r} has none of {', '.join(_TRUTH_KEYS)}")
    for sub in t.get("any_of", ()):
        _check_truth(sub, where)
    if "time" in t and not all(isinstance(w, list) and len(w) == 2 and w[0] <= w[1] for w in t["time"]):
        raise ValueError(f"{where}: truth time {t['time']!r}: give windows [[lo, hi], ...] with lo <= hi")


_FIELDS = ("id", "recording", "kind", "half", "question", "truth")


def _checked_rows(src: str, numbered, fields: Sequence[str], taken=frozenset(), check=None) -> list[dict]:
    """The rows of one question file, checked: ``fields`` present, a known recording, ids unique
    (and none of ``taken``), a truth form; ``check(row)`` -> an error text (None: fine) for the rest."""
    rows, seen = [], set(taken)
    for i, r in numbered:
        missing = [k for k in fields if k not in r]
        if missing or r["recording"] not in RECORDINGS:
            raise ValueError(f"{src}:{i}: row {r.get('id')!r} lacks {missing} or names an unknown recording "
                             f"{r.get('recording')!r} ({', '.join(RECORDINGS)})")
        why = check(r) if check else None
        if why:
            raise ValueError(f"{src}:{i}: row {r['id']!r}: {why}")
        if r["id"] in seen:
            raise ValueError(f"{src}:{i}: id {r['id']!r} repeats")
        seen.add(r["id"])
        _check_truth(r["truth"], f"{src}:{i} ({r['id']})")
        rows.append(r)
    return rows


def load_own_questions(path: Optional[Path] = None) -> list[dict]:
    """The question rows (``harp_lib/data/own_questions.jsonl`` unless ``path``), checked: the
    fields, a known recording, a truth form, no repeated id, and ``half`` as :func:`split_rows` says."""
    src, numbered = data_rows("own_questions.jsonl", path)
    rows = _checked_rows(src, numbered, _FIELDS)
    halves = split_rows([{"id": r["id"], "task": r["kind"]} for r in rows])
    bad = [r["id"] for r in rows if r["half"] != halves[r["id"]]]
    if bad:
        raise ValueError(f"{src}: rows {bad[:5]} have a half other than split_rows gives (sha256 of the id within "
                         f"each kind); set it from split_rows, never by hand")
    return rows


def load_held_out(path: Optional[Path] = None, round_one: Optional[Sequence[Mapping]] = None) -> list[dict]:
    """The held-out questions (``harp_lib/data/own_questions_r2.jsonl`` unless ``path``): round 2,
    written from the references before the system was ever run on them, every row ``"half": "eval"``
    (no tuning half: round 1's two halves serve for tuning).  Checked as :func:`load_own_questions`
    checks, and no id may repeat one of round 1 (``round_one``, default the shipped file)."""
    src, numbered = data_rows("own_questions_r2.jsonl", path)
    taken = {r["id"] for r in (load_own_questions() if round_one is None else round_one)}
    return _checked_rows(src, numbered, _FIELDS + ("round",), taken,
                         lambda r: None if (r["round"], r["half"]) == (2, "eval") else
                         "a held-out row is round 2 and half eval")


def report_set(row: Mapping) -> str:
    """Where a question's result is reported: ``eval`` (the held-out round 2), ``seen`` (round 1's
    evaluation half: its answers were read at stop 49 and fixes followed, so it no longer measures
    anything held out) or ``tune`` (round 1's tuning half)."""
    if row.get("round", 1) == 2:
        return "eval"
    return "seen" if row["half"] == "eval" else "tune"


def is_refusal(ans: Mapping) -> bool:
    """``harp ask``'s two refusals: a known kind this recording lacks, or no kind at all."""
    a = str(ans.get("answer") or "").strip().lower()
    return a.startswith(("cannot answer this", "unsupported question"))


def _num(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _text_times(text: str) -> list[float]:
    """Times an answer's text gives: "12.3 s" (seconds) first, else clock times "1:34"."""
    secs = [float(x) for x in re.findall(r"(\d+(?:\.\d+)?)\s*s\b", text)]
    if secs:
        return secs
    return [int(h or 0) * 3600 + int(m) * 60 + int(s) for h, m, s in
            re.findall(r"\b(?:(\d+):)?(\d{1,2}):(\d{2})\b", text)]


def _times(ans: Mapping, field: str) -> list[float]:
    v = ans.get("value")
    if isinstance(v, dict):
        v = v.get(field)
    if _num(v) is not None:
        return [_num(v)]
    if isinstance(v, list) and v and all(_num(x) is not None for x in v):
        return [float(x) for x in v]
    return _text_times(str(ans.get("answer") or ""))


def _labels(ans: Mapping) -> list[str]:
    v = ans.get("value")
    if isinstance(v, str) and v:
        return [v]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    return re.findall(r"\bSPEAKER_\d+\b", str(ans.get("answer") or ""))


def _song(ans: Mapping) -> Optional[int]:
    v = ans.get("value")
    if isinstance(v, dict):
        v = v.get("song")
    if _num(v) is not None:
        return int(v)
    m = re.search(r"\b(?:song|track)\s*(?:#|no\.?\s*|number\s+)?(\d+)\b", str(ans.get("answer") or ""), re.I)
    return int(m.group(1)) if m else None


def _yes(ans: Mapping) -> Optional[bool]:
    v = ans.get("value")
    if isinstance(v, bool):
        return v
    m = re.match(r"\W*(yes|no)\b", str(ans.get("answer") or ""), re.I)
    return None if m is None else m.group(1).lower() == "yes"


def _count(ans: Mapping) -> Optional[int]:
    v = _num(ans.get("value"))
    if v is not None and v == int(v):
        return int(v)
    m = re.search(r"\b(\d+)\b", str(ans.get("answer") or ""))
    return int(m.group(1)) if m else None


def _matches(ans: Mapping, t: Mapping, speakers: Mapping[str, str]) -> bool:
    """Whether an answer (not a refusal) is what one truth form accepts."""
    text = str(ans.get("answer") or "").lower()
    if "count" in t:
        return _count(ans) == t["count"]
    if "time" in t:
        tol = float(t.get("tol", 1.0))
        got = _times(ans, t.get("field", "start"))
        return bool(got) and all(any(lo - tol <= x <= hi + tol for lo, hi in t["time"]) for x in got)
    if "length" in t:
        v = ans.get("value")
        got = _num(v.get("length")) if isinstance(v, dict) else _num(v)
        got = got if got is not None else next(iter(_text_times(text)), None)
        return got is not None and abs(got - float(t["length"])) <= float(t.get("tol", 5.0))
    if "speaker" in t:
        got = _labels(ans)
        return len(got) == 1 and speakers.get(got[0]) == t["speaker"]
    if "words" in t:
        return any(w.lower() in text for w in t["words"]) and not any(w.lower() in text for w in t.get("not", ()))
    if "yes" in t:
        return _yes(ans) is t["yes"]
    if "song" in t:
        return _song(ans) in t["song"]
    return False


def grade(ans: Mapping, truth: Mapping, speakers: Optional[Mapping[str, str]] = None) -> str:
    """The verdict (one of :data:`VERDICTS`) of a ``harp ask`` answer record against a truth form;
    ``speakers`` maps diarized labels to reference speakers (:func:`speaker_map`)."""
    if ans.get("error") or ans.get("answer") is None:
        return "error"
    forms = list(truth.get("any_of") or [truth])
    if is_refusal(ans):
        why = str(ans.get("rationale") or "")
        ok = any(f.get("refuse") and (f.get("hint") or "") in why for f in forms)
        return "refused_properly" if ok else "refused_wrongly"
    return "right" if any(not f.get("refuse") and _matches(ans, f, speakers or {}) for f in forms) else "wrong"


def speaker_map(segments: Sequence, reference: Sequence[tuple[float, float, str]]) -> dict[str, str]:
    """Each diarized label -> the reference speaker its segments overlap most (labels are arbitrary).

    >>> from types import SimpleNamespace as S
    >>> speaker_map([S(start=0, end=2, speaker="SPEAKER_01"), S(start=2, end=4, speaker="SPEAKER_00")],
    ...             [(0, 2.1, "diane"), (2.1, 4, "sheila")])
    {'SPEAKER_01': 'diane', 'SPEAKER_00': 'sheila'}
    """
    over: dict[str, Counter] = defaultdict(Counter)
    for s in segments:
        for a, b, who in reference:
            over[s.speaker][who] += max(0.0, min(b, s.end) - max(a, s.start))
    return {k: v.most_common(1)[0][0] for k, v in over.items() if v and v.most_common(1)[0][1] > 0}


def summarize(results: Sequence[Mapping]) -> dict:
    """``{"overall": counts, "kinds": {kind: counts}}``; counts hold every verdict, ``n``, ``right``
    (answered right + refused properly) and ``right_pct`` / ``refused_wrongly_pct``."""
    def counts(rs):
        c = Counter(r["verdict"] for r in rs)
        d = {v: c.get(v, 0) for v in VERDICTS}
        n = len(rs)
        d.update(n=n, right_total=d["right"] + d["refused_properly"])
        d.update(right_pct=round(100 * d["right_total"] / n, 1) if n else None,
                 refused_wrongly_pct=round(100 * d["refused_wrongly"] / n, 1) if n else None)
        return d
    kinds: dict[str, list] = defaultdict(list)
    for r in results:
        kinds[r["kind"]].append(r)
    return {"overall": counts(results), "kinds": {k: counts(v) for k, v in kinds.items()}}


def _table(title: str, summaries: Mapping[str, dict], caption: Sequence[str]) -> list[str]:
    agents = list(summaries)
    head = "| kind | " + " | ".join(f"{a} n | {a} right (of which refused properly) | {a} wrong | "
                                     f"{a} refused wrongly | {a} error" for a in agents) + " |"
    lines = [f"# {title}", "", *caption, "", head, "|---|" + "---:|---:|---:|---:|---:|" * len(agents)]
    kinds = sorted({k for s in summaries.values() for k in s["kinds"]})

    def cell(c):
        return (f"{c['n']} | {c['right_total']} ({c['refused_properly']}) | {c['wrong']} | "
                f"{c['refused_wrongly']} | {c['error']}")
    for k in kinds:
        lines.append(f"| {k} | " + " | ".join(cell(summaries[a]["kinds"].get(k) or {**{v: 0 for v in VERDICTS},
                                                                                    "n": 0, "right_total": 0})
                                             for a in agents) + " |")
    lines.append("| **all** | " + " | ".join(cell(summaries[a]["overall"]) for a in agents) + " |")
    lines += ["", *(f"- **{a}**: {s['overall']['right_pct']} % right, {s['overall']['refused_wrongly_pct']} % "
                    f"refused wrongly ({s['overall']['right_total']} / {s['overall']['n']})" for a, s in summaries.items())]
    return lines + [""]


def write_tables(results: Mapping[str, Sequence[Mapping]], meta: Mapping, out: Path) -> list[Path]:
    """``results/metrics/own_questions.json``, ``results/tables/own_questions.md`` and
    ``results/tables/own_questions_tune.md``.  ``results`` maps an agent to its graded rows, each
    with ``half`` set to its :func:`report_set`: ``eval`` (held out: the measure, summaries and rows),
    ``seen`` (round 1's evaluation half, summaries and rows, reported beside it and marked so) and
    ``tune`` (overall counts in the JSON; its rows in the tuning table)."""
    out = Path(out)
    sets = ("eval", "seen", "tune")
    halves = {h: {a: [r for r in rs if r["half"] == h] for a, rs in results.items()} for h in sets}
    summ = {h: {a: summarize(rs) for a, rs in by.items() if rs} for h, by in halves.items()}
    data = {"meta": dict(meta), **{h: {a: {**s, "rows": halves[h][a]} for a, s in summ[h].items()} for h in ("eval", "seen")},
            "tune": {a: s["overall"] for a, s in summ["tune"].items()}}
    cap = ("Hand-written questions about real recordings (`harp_lib/data/own_questions*.jsonl`, built by "
           "`scripts/own_questions.py`: the pyannote sample call, the call with a third flite voice, a 4-track "
           "real-music medley), asked with `harp ask` and graded against truth written from the references "
           "(`harp_lib/evaluate/own_questions.py`). ")
    main = _table("Own-recording questions: held-out evaluation (round 2)", summ["eval"],
                  [cap + "**The measure is the held-out round 2** (`own_questions_r2.jsonl`: written from the "
                   "references and committed before the system was run on it; never tuned on). The tuning half "
                   "is in `own_questions_tune.md`.", "", _meta_line(meta)])
    if summ["seen"]:
        main += _table("Round 1's evaluation half (seen: not held out any more)", summ["seen"],
                       ["Its answers were read at stop 49 and the fixes after that knew its failures, so it is "
                        "reported for continuity only, not as an evaluation."])
    files = {out / "metrics" / "own_questions.json": json.dumps(data, indent=1, sort_keys=True, default=str) + "\n",
             out / "tables" / "own_questions.md": "\n".join(main),
             out / "tables" / "own_questions_tune.md": "\n".join(_table(
                 "Own-recording questions: TUNING half (not the evaluation)", summ["tune"],
                 [cap + "The half kinds may be tuned on; the evaluation is `own_questions.md`.", "",
                  _meta_line(meta)]) + _tune_rows(halves["tune"]))}
    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = part_path(p)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(p)
    return list(files)


def _meta_line(meta: Mapping) -> str:
    return "Run: " + ", ".join(f"{k}={v}" for k, v in meta.items())


def _tune_rows(by_agent: Mapping[str, Sequence[Mapping]]) -> list[str]:
    lines = ["## Tuning-half rows", "", "| agent | id | kind | question | verdict | answer |", "|---|---|---|---|---|---|"]
    for a, rs in by_agent.items():
        for r in rs:
            ans = " ".join(str(r.get("answer") or r.get("error") or "").split())[:100].replace("|", "/")
            lines.append(f"| {a} | {r['id']} | {r['kind']} | {r['question']} | {r['verdict']} | {ans} |")
    return ["", *lines, ""]
