"""The planners of evidence sets: the LLM planner and the rule planner (``agent.planner``: llm | rule).

A plan is ``{"sets": [{"localize", "time", "keyword", "label", "text_emb", "audio_emb",
"domain_emb"}]}`` restricted to the setup's tools (HARP_REFERENCE §3.2): its schema is
:mod:`harp_lib.agent.plan_schema`, its parsing with repair :mod:`harp_lib.agent.plan_parse`, the
LLM's prompt :mod:`harp_lib.agent.plan_prompts`, and the sets that follow from a question's Intent
:mod:`harp_lib.agent.plan_sets`.
"""
from __future__ import annotations

import re
from dataclasses import replace

from harp_lib.agent.llm_intent import llm_intent
from harp_lib.agent.plan_parse import parse_plan, plan_fell_back
from harp_lib.agent.plan_prompts import plan_prompt
from harp_lib.agent.plan_schema import plan_json_schema
from harp_lib.agent.plan_sets import _content_words, _song_phrase, intent_cues, plan_from_intent
from harp_lib.core.schema import Plan
from harp_lib.retrieval.references import clip_info
from harp_lib.tasks import read_question
from harp_lib.understand.time_words import time_mentions

__all__ = ["RulePlanner", "LLMPlanner"]


# ---------------------------------------------------------------------------------------
# Planners
# ---------------------------------------------------------------------------------------
class LLMPlanner:
    """Plan with an LLM, under a grammar.

    ``mode``: ``intent`` -- the LLM fills the question's Intent and the evidence sets follow from
    it (:meth:`plan_intent`; the offline text models); ``sets`` -- the LLM writes the evidence
    sets under the plan JSON schema (:meth:`plan_sets`; the paper's audio LLM); ``auto`` (default)
    -- ``intent`` for a text-only client (``supports_audio`` False, llm backend ``local``), else
    ``sets``.
    """
    name = "llm"

    def __init__(self, client=None, mode: str = "auto"):
        if mode not in ("auto", "intent", "sets"):
            raise ValueError(f"LLMPlanner mode must be auto, intent or sets, got {mode!r}")
        self.client, self.mode = client, mode

    def plan(self, ctx) -> tuple[Plan, dict]:
        mode = self.mode
        if mode == "intent" or (mode == "auto" and not getattr(self.client, "supports_audio", True)):
            return self.plan_intent(ctx)
        return self.plan_sets(ctx)

    def plan_intent(self, ctx) -> tuple[Plan, dict]:
        """The LLM fills the question's :class:`~.intent.Intent` under a grammar
        (:mod:`.llm_intent`, checked against the rule parse); the evidence sets follow from the
        intent alone (:func:`plan_from_intent`).  The intent prompt does not name the setup, so
        A1-A5 share one reply; the intent is kept on ``ctx`` for the answerer."""
        q = ctx.query
        it, meta = llm_intent(self.client, q.text, q.domain, tuple(q.references))
        ctx.intent = it
        plan = plan_from_intent(ctx, it, *intent_cues(it))
        notes = tuple(f"intent: {n}" for n in meta["intent_notes"])
        if notes:
            plan = Plan(sets=plan.sets, errors=notes + tuple(plan.errors))
        return plan, {"planner": self.name, "planner_model": meta["intent_model"], "planner_cached": meta["intent_cached"],
                      "raw_plan": meta["intent_raw"], "intent": it.task}

    def plan_sets(self, ctx) -> tuple[Plan, dict]:
        """The paper's planner: the LLM writes the evidence sets as JSON under the plan schema."""
        q = ctx.query
        max_sets = int(ctx.params.max_sets)
        windows = time_mentions(q.text)            # from the question text only
        if q.domain == "song":                     # "the one playing at 2:04" -> the detected song holding it
            windows = [_song_phrase(w, ctx) for w in windows]
        schema = plan_json_schema(ctx.tools, tuple(q.references), q.domain, max_sets, windows)
        prompt = plan_prompt(q, tools=ctx.tools, duration=ctx.recording.duration,
                             clip_info=clip_info(ctx), max_sets=max_sets, windows=windows)
        r = self.client.complete([prompt], json_schema=schema, max_tokens=int(ctx.params.plan_max_tokens))
        plan = parse_plan(r.text, tools=ctx.tools, roles=tuple(q.references), domain=q.domain,
                          max_sets=max_sets, fallback=ctx.params.empty_plan_fallback)
        if plan_fell_back(plan) and callable(getattr(self.client, "forget", None)):
            self.client.forget(r)                  # a refusal is not replayed once the server is fixed
        return plan, {"planner": self.name, "planner_model": r.model_id, "planner_cached": r.cached,
                      "raw_plan": r.text}


_QUOTE = re.compile(r"[\"“”]([^\"“”]{2,200})[\"“”]")
_TOPIC = re.compile(r"\b(?:talking|talked|speaking|spoke|discussing|discussed|about|on the topic of|"
                    r"regarding|while discussing)\s+(?:about\s+)?(.+?)(?:\s+and\s+(?:mentioned|said)\b|[,.;?]|$)",
                    re.I)
_DIMS = ("valence", "arousal", "dominance")


def _time_phrases(text: str) -> list[str]:
    """Time phrases in query text, in order: ranges, 'Nth song' mentions, points."""
    s = text
    out: list[str] = []
    num = r"\d+(?:\.\d+)?"
    unit = r"(?:seconds?|secs?|s|minutes?|mins?|m)\b"
    clock = r"\d{1,2}:\d{2}(?::\d{2})?"
    rng = re.compile(rf"(?:from|between)\s+(?:({clock})|({num})\s*({unit})?)\s+(?:to|and|until)\s+"
                     rf"(?:({clock})|({num})\s*({unit})?)", re.I)
    for m in rng.finditer(s):
        out.append(m.group(0))
    if out:
        return out
    songs = re.findall(r"\b(\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|"
                       r"ninth|tenth|last)\b(?=[^.?]*\bsongs?\b)", s, re.I)
    if songs and re.search(r"\bsongs?\b", s, re.I):
        return [f"the {o} song" for o in songs]
    first = re.findall(r"\b(?:in\s+the\s+)?((?:first|last|final)\s+(?:\d+(?:\.\d+)?\s+)?(?:minutes?|seconds?|mins?|secs?))\b",
                       s, re.I)
    pts = re.findall(rf"\b(?:at|around|about|near|~)\s+(?:around\s+)?((?:{clock})|(?:[\w.\s-]{{1,30}}?\b(?:minutes?|"
                     rf"mins?|seconds?|secs?|hours?)\b))", s, re.I)
    return [f"the {f}" for f in first] + [f"around {p.strip()}" for p in pts]


class RulePlanner:
    """Deterministic planner reading the query text and its reference roles.

    * time phrases ("from 40 to 95 seconds", "around 3 minutes", "the 4th and 12th songs")
      become one set each (comparisons of two speakers share one window, one set per speaker);
    * roles A/B -> ``audio_emb`` (speaker / song similarity), E -> ``domain_emb`` + the E clip's
      emotion (labelled with the offline labeler) as ``label``;
    * quoted text -> ``keyword`` (its longest content word, robust to ASR) and ``text_emb``;
      topic phrases ("discussing X") -> ``text_emb``;
    * clinical questions search the consultation for symptom words (reported) or cough labels
      (exhibited);
    * fields for tools the setup does not enable are simply not emitted.
    """
    name = "rule"

    def __init__(self):
        pass

    def plan(self, ctx) -> tuple[Plan, dict]:
        q = ctx.query
        text = q.text
        intent = read_question(text, q.domain, sorted(q.references))      # from the text: never q.query_type
        if not intent.times and _time_phrases(text):
            intent = replace(intent, times=tuple(_time_phrases(text)))
        quote = (_QUOTE.search(text) or [None, None])[1] if _QUOTE.search(text) else None
        topic = None
        m = _TOPIC.search(_QUOTE.sub("", text))
        if m:
            topic = m.group(1).strip()
            if len(_content_words(topic)) == 0:
                topic = None
        keyword = max(_content_words(quote), key=len) if quote and _content_words(quote) else None
        return plan_from_intent(ctx, intent, keyword, quote or topic), {"planner": self.name}

