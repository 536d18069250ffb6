"""What a *text* LLM answerer gets instead of audio: what the offline labelers heard in the clips.

The paper's answerer is an audio LLM that listens to the attached ``[Set N]`` and ``[Snippet X]``
clips.  The offline agent's model (:mod:`harp_lib.local_llm`) reads text only, so for every
setup that attaches audio (A4-A7) the evidence clips are run through the domain's offline
labelers (``extract.backends.labelers``; for clinical audio-only setups also the offline ASR)
and the result is written as a clearly marked block: *machine listening of the clips, not
metadata*.  Metadata setups (A1-A3) get no such block; multimodal setups (A5, A7) get both the
metadata evidence and the heard block.  The query's reference clips are described the same way
(:func:`~harp_lib.agent.references.clip_info`).  Nothing here reads ``query_type`` or ground
truth: what is heard depends on the domain, the setup and the evidence only.

>>> HEARD_HEADER.split(":")[0]
'HEARD IN THE ATTACHED AUDIO CLIPS (offline machine listening, not metadata; may be wrong)'
"""
from __future__ import annotations

from typing import Optional

from ..schema import Evidence
from .evidence import fmt_range, render_labels
from .multimodal import clip_spans

__all__ = ["heard_block", "HEARD_HEADER", "ANSWER_SCHEMA", "parse_answer"]

#: The reply shape of a text answerer (decision first, then the cited rationale); lengths keep a
#: whole reply under ~110 tokens, inside ``llm_offline.max_tokens`` (256).
ANSWER_SCHEMA: dict = {
    "title": "answer", "type": "object", "additionalProperties": False, "required": ["answer", "rationale"],
    "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 60,
                              "description": "the decision only: an emotion, rising/falling/none, A/B/tie, "
                                            "Yes/No, or a time m:ss with the emotion"},
                   "rationale": {"type": "string", "maxLength": 300,
                                 "description": "cite time ranges like [12.4s–17.1s], speakers and labels"}}}


def parse_answer(text: str) -> tuple[str, str]:
    """``(answer, rationale)`` of a reply under :data:`ANSWER_SCHEMA`; a reply cut short or not JSON
    falls back to the "Rationale:" split.

    >>> parse_answer('{"answer": "Happy", "rationale": "[1.0s–2.0s] primary=Happy"}')
    ('Happy', '[1.0s–2.0s] primary=Happy')
    >>> parse_answer('{"answer": "No", "rationale": "none of the tur')
    ('No', 'none of the tur')
    """
    import json
    import re
    from ..answer_format import split_rationale
    try:
        d = json.loads(text)
        return str(d.get("answer", "")).strip(), str(d.get("rationale", "")).strip()
    except (json.JSONDecodeError, AttributeError):
        pass
    m = re.match(r'\s*\{\s*"answer"\s*:\s*"((?:[^"\\]|\\.)*)"\s*(?:,\s*"rationale"\s*:\s*"(.*))?', text or "", re.S)
    if m:
        return m.group(1).strip(), (m.group(2) or "").rstrip('"} \n').strip()
    return split_rationale(text)

HEARD_HEADER = ("HEARD IN THE ATTACHED AUDIO CLIPS (offline machine listening, not metadata; may be wrong): "
                "labels the offline labelers assign to each segment's audio")


def heard_block(ctx, evidence: Evidence) -> str:
    """The marked text block of what was heard in the attached clips ("" when the setup attaches none)."""
    from .references import clip_info
    if ctx is None or not ctx.setup.attach_audio:
        return ""
    hearing = ctx.hearing
    lines = [HEARD_HEADER]
    refs = clip_info(ctx) if hearing is not None else ""
    if refs:
        lines.append(f"Reference clips: {refs}")
    path = ctx.audio_path
    spans, where = clip_spans(evidence)
    if hearing is None or not getattr(hearing, "available", False) or path is None:
        lines.append("(no offline labeler available: nothing could be heard in the clips)")
        return "\n".join(lines)
    if not spans:
        lines.append("(no retrieved segment to listen to)")
        return "\n".join(lines)
    texts: Optional[list[str]] = None
    if ctx.domain == "clinical" and not ctx.setup.show_metadata:
        texts = [hearing.transcribe(path, sp) for sp in spans]    # what is said, heard by the offline ASR
    groups = [f"SET_{evidence.sets[si].index}" for si, _ in where] if ctx.domain == "song" else None
    try:
        labs = hearing.label_spans(path, spans, texts, groups)
    except Exception as e:  # noqa: BLE001 - reported in the block, not fatal
        lines.append(f"(could not listen to the clips: {type(e).__name__}: {e})")
        return "\n".join(lines)
    by_set: dict[int, list[str]] = {}
    for k, ((si, ii), sp, lab) in enumerate(zip(where, spans, labs)):
        bits = [fmt_range(sp.start, sp.end), render_labels(lab) if lab else "(nothing recognised)"]
        if texts and texts[k]:
            bits.append(f'heard speech: "{texts[k]}"')
        by_set.setdefault(si, []).append(" ".join(bits))
    for si, s in enumerate(evidence.sets):
        if si in by_set:
            lines.append(f"[Set {s.index}] " + "; ".join(by_set[si]))
    return "\n".join(lines)
