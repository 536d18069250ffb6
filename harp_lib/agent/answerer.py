"""Answerers: the LLM answerer (paper) and a deterministic rule answerer.

Both return ``(answer, rationale, meta)``.  Answers start with the decision in the shared
vocabulary (docs/architecture.md "Answers and rationales"); rationales cite evidence as
``[12.4s–17.1s]`` ranges with speakers and labels.

The rule answerer reads only what the setup shows (:mod:`.multimodal`): metadata setups
(A1-A3) read the evidence labels/text; audio-only setups (A4, A6, ``strip_domain``) see no
labels, so it runs the offline labelers on the attached clip audio of each retrieved segment
("what it could hear") — and, for reported clinical symptoms, the offline ASR; multimodal
setups (A5, A7) use both, fused (:func:`.multimodal.fuse_labels`).  Which rule answers is
chosen from the question text (:mod:`.intent`), never from ``Query.query_type``.

>>> split_rationale("Happy. Rationale: [1.0s–2.0s] primary=Happy")
('Happy.', '[1.0s–2.0s] primary=Happy')
>>> split_rationale("Rationale: only this")     # no decision before it: an empty answer
('', 'only this')

The per-type rules of the rule answerer are the ``rule_answer`` methods of
:mod:`harp_lib.tasks` (one class per query type).
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from harp_lib import tasks
from harp_lib.core.answer_format import split_rationale
from harp_lib.core.schema import Evidence, Plan
from harp_lib.agent.digest import evidence_digest, evidence_source, segment_list
from harp_lib.agent.evidence import evidence_clips, reference_clips, render_evidence
from harp_lib.agent.heard import answer_schema, parse_answer
from harp_lib.understand.intent import UNSUPPORTED
from harp_lib.tasks import read_question
from harp_lib.agent.multimodal import visible_sets
from harp_lib.agent.plan_prompts import load_prompt

__all__ = ["split_rationale", "RuleAnswerer", "LLMAnswerer", "NoAnswer", "check_answer_space", "answer_prompt", "text_answer_prompt", "visible_sets"]


# ---------------------------------------------------------------------------------------
# What the answerer can see
# ---------------------------------------------------------------------------------------


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
        intent = read_question(ctx.query.text, ctx.domain, tuple(ctx.query.references))   # text, never query_type
        if intent.task == UNSUPPORTED:
            return "unsupported question", intent.reason + ".", {"answerer": self.name}
        ans, why = self.answer_as(intent.task, ctx, sets)
        if intent.absence and ans in ("Yes", "No"):       # "was the visit free of coughing?"
            why = f"The question asks whether they were absent; {'present' if ans == 'Yes' else 'absent'}: {why}"
            ans = "No" if ans == "Yes" else "Yes"
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


def answer_prompt(ctx, plan: Plan, evidence: Evidence, clip_labels: Sequence[str],
                  evidence_text: Optional[str] = None) -> str:
    """Fill ``prompts/answer_<domain>.txt`` (evidence text per the setup, set guide, clip note).

    ``evidence_text``: the evidence already rendered as text (e.g. with what the offline labelers
    heard in the clips); it replaces the evidence rendering and the clip note.
    """
    if evidence_text is not None:
        ev = evidence_text
    elif ctx.setup.show_metadata or ctx.setup.strip_domain:
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
    if evidence_text is not None:
        note = ""
    template = load_prompt(f"answer_{ctx.domain}")
    if evidence_text is not None:      # the text answerer replies in JSON (ANSWER_SCHEMA), not "Rationale:" prose
        template = _RATIONALE_PROSE.sub(JSON_REPLY, template)
    return template.format(task=load_prompt(f"task_{ctx.domain}").strip(), evidence=ev, set_guide=guide,
                           clip_note=note, query=ctx.query.text)


#: The answer templates ask for "<decision>. Rationale: ..."; a reply decoded under
#: :data:`~harp_lib.agent.heard.ANSWER_SCHEMA` puts the decision in "answer" instead (the 0.5B
#: otherwise wrote "Rationale:" into the answer field).
_RATIONALE_PROSE = re.compile(r'Then write "Rationale:" and\s+cite')
JSON_REPLY = 'Reply in JSON: "answer" holds the decision only; in "rationale" cite'


NO_TEXT = "(evidence is given as audio only)"


def _question_intent(ctx):
    """The intent the planner put on ``ctx``, else the one read from the question text — never
    ``Query.query_type`` (a context without an intent, e.g. a duck-typed one in tests, reads the text)."""
    return getattr(ctx, "intent", None) or read_question(ctx.query.text, ctx.domain, tuple(ctx.query.references))


def text_answer_prompt(ctx, plan: Plan, evidence: Evidence) -> tuple[str, Optional[dict[str, str]]]:
    """The text answerer's prompt (``prompts/answer_text.txt``) and the allowed answers
    (``{shown option: decision}``, None: free text).

    Fixed head (the domain's task description: the same bytes for every query of a domain, so
    llama.cpp keeps its KV cache), then the retrieved time ranges per set
    (:func:`harp_lib.agent.digest.segment_list`, for citations), the facts computed from the
    evidence this setup may see (:func:`harp_lib.agent.digest.evidence_digest`) and the question.  The
    allowed answers (:func:`harp_lib.agent.digest.answer_choices`) follow the intent of the
    question text (:func:`harp_lib.tasks.read_question`) — never ``query_type`` or ground truth.
    """
    intent = _question_intent(ctx)
    digest, options = evidence_digest(ctx, evidence, intent)
    choices = dict(options) or None
    prompt = load_prompt("answer_text").format(
        task=load_prompt(f"task_{ctx.domain}").strip(), evidence=evidence_source(ctx) + "\n" + segment_list(ctx, evidence),
        digest=digest or "(no facts computed)", query=ctx.query.text,
        options=" | ".join(choices) if choices else "free text")
    return prompt, choices


class NoAnswer(ValueError):
    """The model replied with something outside the question's answer space (a refusal, prose)."""


def check_answer_space(client, response, ctx, answer: str) -> None:
    """Raise :class:`NoAnswer` when ``answer`` says nothing the question can be answered with,
    after dropping ``response`` from the client's reply cache, so a fixed server is asked again.
    The answer space is that of the task read from the question text (:func:`harp_lib.tasks.read_question`),
    never ``Query.query_type`` (a benchmark label); a task without ``parse_decision`` is not checked."""
    if not str(answer or "").strip():
        return                                     # the runner's "empty answer" error says it
    task = _question_intent(ctx).task
    try:
        ok = tasks.registry.in_answer_space(task, answer)
    except (tasks.registry.UnknownTaskError, NotImplementedError):
        return
    if ok:
        return
    forget = getattr(client, "forget", None)
    if callable(forget):
        forget(response)
    raise NoAnswer(f"the model's reply {str(answer)[:120]!r} is not an answer to a {task} question "
                   f"(a refusal or prose): no answer; not cached (reply cache entry dropped)")


class LLMAnswerer:
    """Answer with an LLM: clips first ([Snippet X] then [Set N]), then the prompt.

    A text-only client (``supports_audio`` False, e.g. the offline ``local`` backend) gets no
    clips; it reads :func:`text_answer_prompt`: where its labels come from (metadata, what the
    offline labelers heard in the clips, or both), the retrieved time ranges, the facts computed
    on the evidence this setup may see (:mod:`.digest`) and the question.  Its reply is decoded
    under :func:`harp_lib.agent.heard.answer_schema` (``{"rationale", "answer"}``, in that order;
    ``answer`` one of the intent's options, each annotated with what the facts say about it), and
    the chosen option is mapped back to its decision ("B (the higher arousal)" -> "B").
    """
    name = "llm"

    def __init__(self, client=None):
        self.client = client

    def answer(self, ctx, plan: Plan, evidence: Evidence) -> tuple[str, str, dict]:
        if not getattr(self.client, "supports_audio", True):
            prompt, choices = text_answer_prompt(ctx, plan, evidence)
            r = self.client.complete([prompt], json_schema=answer_schema(list(choices or ())),
                                     max_tokens=int(ctx.params.answer_max_tokens))
            ans, why = parse_answer(r.text)
            if choices and ans in choices:             # "B (the higher arousal)" -> "B"
                why = f"{ans}. {why}" if choices[ans] != ans else why
                ans = choices[ans]
            check_answer_space(self.client, r, ctx, ans)
            return ans, why, {"answerer": self.name, "answerer_model": r.model_id, "answerer_cached": r.cached,
                              "audio_sec": 0.0, "heard": bool(ctx.setup.attach_audio), "raw_output": r.text}
        sr = int(ctx.params.clip_sample_rate)
        clips = []
        if ctx.setup.attach_audio or ctx.params.attach_references_in_metadata_setups:
            clips += reference_clips(ctx.references, sr=sr)
        if ctx.setup.attach_audio and ctx.audio_path is not None:
            clips += evidence_clips(evidence, ctx.audio_path, sr=sr)
        prompt = answer_prompt(ctx, plan, evidence, [c.label for c in clips])
        r = self.client.complete([*clips, prompt], max_tokens=int(ctx.params.answer_max_tokens))
        ans, why = split_rationale(r.text)
        check_answer_space(self.client, r, ctx, ans)
        return ans, why, {"answerer": self.name, "answerer_model": r.model_id, "answerer_cached": r.cached,
                          "audio_sec": r.audio_sec, "raw_output": r.text}
