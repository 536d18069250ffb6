"""Answerers: the LLM answerer (paper) and a deterministic rule answerer.

Both return ``(answer, rationale, meta)``.  Answers start with the decision in the shared
vocabulary (docs/architecture.md "Answers and rationales"); rationales cite evidence as
``[12.4s–17.1s]`` ranges with speakers and labels.

The rule answerer reads only what the setup shows: metadata setups (A1-A3, A5, A7) read the
evidence labels/text; audio-only setups (A4, A6, ``strip_domain``) see no labels, so it runs
the offline labelers on the attached clip audio of each retrieved segment ("what it could
hear") — and, for reported clinical symptoms, the offline ASR.

>>> split_rationale("Happy. Rationale: [1.0s–2.0s] primary=Happy")
('Happy.', '[1.0s–2.0s] primary=Happy')
>>> split_rationale("Rationale: only this")     # no decision before it: an empty answer
('', 'only this')

The per-type rules of the rule answerer are the ``rule_answer`` methods of
:mod:`harp_lib.tasks` (one class per query type).
"""
from __future__ import annotations

from typing import Sequence

from .. import tasks
from ..answer_format import split_rationale
from ..schema import Evidence, EvidenceItem, EvidenceSet, Plan
from ..timespan import Span
from .evidence import evidence_clips, reference_clips, render_evidence
from .planner import load_prompt

__all__ = ["split_rationale", "RuleAnswerer", "LLMAnswerer", "answer_prompt", "visible_sets"]


# ---------------------------------------------------------------------------------------
# What the answerer can see
# ---------------------------------------------------------------------------------------
def visible_sets(ctx, evidence: Evidence) -> tuple[list[tuple[EvidenceSet, list[EvidenceItem]]], list[str]]:
    """Evidence sets with the items as this setup shows them; plus notes on what was heard.

    Metadata setups: items unchanged.  Audio-only setups: speaker/text/labels removed and
    labels replaced by what the offline labelers hear in the item's part of the set clip.
    """
    notes: list[str] = []
    if ctx.setup.show_metadata:
        return [(s, list(s.items)) for s in evidence.sets], notes
    hearing = ctx.hearing if ctx.p("hear_with_labelers") else None
    path = ctx.audio_path
    want_text = ctx.query.query_type == "reported"
    spans, where = [], []
    for si, s in enumerate(evidence.sets):
        for ii, it in enumerate(s.items):
            lo = max(it.start, s.clip_start if s.clip_start is not None else it.start)
            hi = min(it.end, s.clip_end if s.clip_end is not None else it.end)
            if hi > lo:
                spans.append(Span(lo, hi))
                where.append((si, ii))
    heard_labels: dict[tuple[int, int], dict] = {}
    heard_text: dict[tuple[int, int], str] = {}
    if hearing is not None and path is not None and spans:
        try:
            texts = [hearing.transcribe(path, sp) for sp in spans] if want_text else None
            # songs: each set's clip is one song; emotion/clinical: windows pooled (speakers unknown)
            groups = [f"SET_{evidence.sets[si].index}" for si, _ in where] if ctx.domain == "song" else None
            for w, lab, t in zip(where, hearing.label_spans(path, spans, texts, groups), texts or [""] * len(spans)):
                heard_labels[w], heard_text[w] = lab, t
        except Exception as e:  # noqa: BLE001
            notes.append(f"could not listen to the clips ({type(e).__name__}: {e})")
    out = []
    for si, s in enumerate(evidence.sets):
        heard = [EvidenceItem(it.segment_id, it.start, it.end, None, heard_text.get((si, ii), ""),
                              heard_labels.get((si, ii), {}), dict(it.sources)) for ii, it in enumerate(s.items)]
        out.append((s, heard))
    if hearing is None or not hearing.available:
        notes.append("audio-only evidence and no offline labeler available: labels unknown")
    else:
        notes.append("labels below are what the offline labelers heard in the clips")
    return out, notes


# ---------------------------------------------------------------------------------------
# Rule answerer
# ---------------------------------------------------------------------------------------
class RuleAnswerer:
    """Deterministic answers with cited rationales: the ``rule_answer`` of the query type's task."""
    name = "rule"

    def __init__(self):
        pass

    def answer(self, ctx, plan: Plan, evidence: Evidence) -> tuple[str, str, dict]:
        sets, notes = visible_sets(ctx, evidence)
        ans, why = self.answer_as(ctx.query.query_type, ctx, sets)
        if notes:
            why = why + " (" + "; ".join(notes) + ")"
        return ans, why, {"answerer": self.name}

    @staticmethod
    def answer_as(task_name: str, ctx, sets) -> tuple[str, str]:
        """The rule answer of query type ``task_name`` on the visible evidence ``sets``."""
        return tasks.get(task_name).rule_answer(ctx, sets)


# ---------------------------------------------------------------------------------------
# LLM answerer
# ---------------------------------------------------------------------------------------
_ORD = {1: "first", 2: "second", 3: "third"}


def answer_prompt(ctx, plan: Plan, evidence: Evidence, clip_labels: Sequence[str]) -> str:
    """Fill ``prompts/answer_<domain>.txt`` (evidence text per the setup, set guide, clip note)."""
    if ctx.setup.show_metadata or ctx.setup.strip_domain:
        ev = render_evidence(evidence, strip_domain=ctx.setup.strip_domain)
    else:
        ev = NO_TEXT
    guide = ""
    if len(plan.sets) >= 2:
        guide = "Evidence set time anchors:\n" + "\n".join(
            f"Set {i}: {ps.localize} ({_ORD.get(i, f'{i}th')} mentioned)" for i, ps in enumerate(plan.sets, 1))
    note = ""
    if clip_labels:
        note = (f"Audio clips attached: {', '.join(clip_labels)}. [Set N: ...] clips hold the recording audio "
                f"of evidence set N; [Snippet X] clips are the query's reference examples. Use what you hear.")
    return load_prompt(f"answer_{ctx.domain}").format(
        task=load_prompt(f"task_{ctx.domain}").strip(), evidence=ev, set_guide=guide, clip_note=note,
        query=ctx.query.text)


NO_TEXT = "(evidence is given as audio only)"


class LLMAnswerer:
    """Answer with an (audio) LLM: clips first ([Snippet X] then [Set N]), then the prompt."""
    name = "llm"

    def __init__(self, client=None):
        self.client = client

    def answer(self, ctx, plan: Plan, evidence: Evidence) -> tuple[str, str, dict]:
        sr = int(ctx.p("clip_sample_rate"))
        clips = []
        if ctx.setup.attach_audio or ctx.p("attach_references_in_metadata_setups"):
            clips += reference_clips(ctx.references, sr=sr)
        if ctx.setup.attach_audio and ctx.audio_path is not None:
            clips += evidence_clips(evidence, ctx.audio_path, sr=sr)
        prompt = answer_prompt(ctx, plan, evidence, [c.label for c in clips])
        r = self.client.complete([*clips, prompt], max_tokens=int(ctx.p("answer_max_tokens")))
        ans, why = split_rationale(r.text)
        return ans, why, {"answerer": self.name, "answerer_model": r.model_id, "answerer_cached": r.cached,
                          "audio_sec": r.audio_sec, "raw_output": r.text}
