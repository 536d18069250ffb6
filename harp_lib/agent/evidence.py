"""Evidence as the answerer (and the judges) see it: text, audio clips, or both.

:func:`render_evidence` writes the text form (HARP_REFERENCE §3.7) with two fixes: *every*
label key is shown (the reference dropped e.g. cough counts), and with ``strip_domain`` the
speaker, text and labels are omitted so only times, tool scores and the audio remain.
:func:`evidence_clips` cuts one 16 kHz clip per set — min start to max end of its items, or the
window when it is empty, capped at ``agent.max_clip_sec`` — labelled ``[Set N: lo-hi s]``,
after the reference snippets ``[Snippet A/B/E]``.

>>> from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet
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
from typing import Mapping

from harp_lib.core import audio
from harp_lib.core.answer_format import fmt_range, render_labels  # the citation format (one module)
from harp_lib.llm import AudioPart
from harp_lib.core.schema import Evidence, EvidenceItem
from harp_lib.core.timespan import Span

__all__ = ["render_evidence", "render_item", "render_labels", "fmt_range", "evidence_clips", "reference_clips",
           "NO_EVIDENCE"]

NO_EVIDENCE = "(no retrieved evidence)"


def render_item(it: EvidenceItem, strip_domain: bool) -> list[str]:
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
            lines.extend(render_item(it, strip_domain))
        if not s.items:
            lines.append("(no segments retrieved)")
        if s.error:
            lines.append(f"(note: {s.error})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def evidence_clips(evidence: Evidence, audio_path: Path, *, sr: int = 16000) -> list[AudioPart]:
    """One clip per evidence set with a clip span, labelled ``[Set N: lo-hi s]`` (read via harp_lib.core.audio)."""
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
