"""Evidence as the answerer (and the judges) see it: text, audio clips, or both.

:func:`render_evidence` writes the text form (HARP_REFERENCE §3.7) with two fixes: *every*
label key is shown (the reference dropped e.g. cough counts), and with ``strip_domain`` the
speaker, text and labels are omitted so only times, tool scores and the audio remain.
:func:`evidence_clips` cuts one 16 kHz clip per set — min start to max end of its items, or the
window when it is empty, capped at ``agent.max_clip_sec`` — labelled ``[Set N: lo-hi s]``,
after the reference snippets ``[Snippet A/B/E]``.

>>> from harp_lib.schema import Evidence, EvidenceItem, EvidenceSet
>>> it = EvidenceItem("r_ext_0001", 12.43, 17.1, "SPEAKER_00", "hello", {"primary": "Happy"}, {"keyword": 1.0})
>>> print(render_evidence(Evidence((EvidenceSet(1, "around 15 s", 0, 45, (it,)),)), strip_domain=False))
### Set 1 (around 15 s; window 0.0s–45.0s)
[12.4s–17.1s] (score: keyword=1.00)
- speaker: SPEAKER_00
- text: "hello"
- labels: primary=Happy
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from .. import audio
from ..llm import AudioPart
from ..schema import Evidence, EvidenceItem, EvidenceSet
from ..timespan import Span

__all__ = ["render_evidence", "render_labels", "fmt_range", "evidence_clips", "reference_clips",
           "NO_EVIDENCE"]

NO_EVIDENCE = "(no retrieved evidence)"
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


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def _render_item(it: EvidenceItem, strip_domain: bool) -> list[str]:
    scores = ", ".join(f"{k}={v:.2f}" for k, v in it.sources.items())
    lines = [f"{fmt_range(it.start, it.end)}" + (f" (score: {scores})" if scores else "")]
    if not strip_domain:
        if it.speaker:
            lines.append(f"- speaker: {it.speaker}")
        if it.text:
            lines.append(f'- text: "{it.text}"')
        lab = render_labels(it.labels or {})
        if lab:
            lines.append(f"- labels: {lab}")
    return lines


def render_evidence(evidence: Evidence, *, strip_domain: bool) -> str:
    """The text form of retrieved evidence (used by the answerer and by the judges).

    One ``### Set i`` block per evidence set (header: its localize phrase and searched window),
    then each item: time range with tool scores, speaker, quoted text and all labels.  With
    ``strip_domain`` only times and scores remain.  Failed sets show their error.
    """
    if not evidence.sets:
        return NO_EVIDENCE
    blocks = []
    for s in evidence.sets:
        win = "" if s.error and not s.items and s.end == 0 else f"; window {s.start:.1f}s–" + (
            "end" if math.isinf(s.end) else f"{s.end:.1f}s")
        head = f"### Set {s.index} ({s.localize}{win})"
        lines = [head]
        for it in s.items:
            lines.extend(_render_item(it, strip_domain))
        if not s.items:
            lines.append("(no segments retrieved)")
        if s.error:
            lines.append(f"(note: {s.error})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def evidence_clips(evidence: Evidence, audio_path: Path, *, sr: int = 16000) -> list[AudioPart]:
    """One clip per evidence set with a clip span, labelled ``[Set N: lo-hi s]`` (read via harp_lib.audio)."""
    out = []
    for s in evidence.sets:
        if s.clip_start is None or s.clip_end is None or s.clip_end <= s.clip_start:
            continue
        span = Span(s.clip_start, s.clip_end)
        wave = audio.read_window(audio_path, span, sr)
        out.append(AudioPart(f"[Set {s.index}: {span.start:.0f}-{span.end:.0f} s]", wave, sr))
    return out


def reference_clips(references: Mapping[str, Path], *, sr: int = 16000) -> list[AudioPart]:
    """The query's reference clips in role order, labelled ``[Snippet A]`` etc."""
    return [AudioPart(f"[Snippet {role}]", audio.load(p, sr), sr) for role, p in sorted(references.items())]
