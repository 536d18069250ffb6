"""The evidence sets of a question from its Intent: the one planning code of the rule planner and
of the LLM planner's intent mode (:func:`plan_from_intent`), per domain, and the search cues.

* clinical: heard coughs (label + keyword per count) or reported symptoms (a keyword per symptom word);
* song: one set per named song (time), one per reference clip, else the window;
* emotion: the reference emotion (E), one per speaker clip (A, B), else one set;
* fields for tools the setup does not enable are simply not emitted.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from harp_lib.agent.plan_parse import fallback_plan, repair_plan
from harp_lib.core.schema import Plan
from harp_lib.core.timespan import LocalizeError, localize, ordinal
from harp_lib.retrieval.references import reference_label
from harp_lib.understand.intent import UNSUPPORTED

__all__ = ["plan_from_intent", "intent_cues"]

_STOPWORDS = frozenset("the a an and or of to in on at for is was were be it this that with as by from "
                       "about did does do their they them he she his her its our your my when what which "
                       "who how while than then there here".split())


def _song_at(phrase: str, ctx) -> dict:
    """"the song playing around 4 minutes": the detected song holding that time, as numeric bounds."""
    if not phrase.startswith("around") or not ctx.songs:
        return {}
    try:
        t = localize(phrase, ctx.recording.duration or None, point_window=0.5).middle
    except LocalizeError:
        return {}
    for n in sorted(ctx.songs):
        sp = ctx.songs[n]
        if sp.start <= t < sp.end:
            return {"start": sp.start, "end": sp.end}
    return {}


def _song_phrase(phrase: str, ctx) -> str:
    """"around 124 seconds" -> "the 3rd song" when the 3rd detected song holds that moment (else as is)."""
    b = _song_at(phrase, ctx)
    for n in sorted(ctx.songs or {}):
        if b and ctx.songs[n].start == b["start"] and ctx.songs[n].end == b["end"]:
            return f"the {ordinal(n)} song"
    return phrase


def _clip_keyword(ctx, role: str) -> Optional[str]:
    """The longest content word the offline ASR hears in a reference clip (None without ASR)."""
    path = ctx.references.get(role)
    if path is None or ctx.hearing is None:
        return None
    try:
        words = _content_words(ctx.hearing.transcribe(path))
    except Exception:  # noqa: BLE001 - no ASR / unreadable clip: plan without a lyric
        return None
    return max(words, key=len) if words else None


def _content_words(s: str) -> list[str]:
    return [w for w in re.findall(r"[a-z']+", s.lower()) if w not in _STOPWORDS and len(w) > 2]


def _clinical_sets(ctx, intent, windows: list[str], low: str, add, sets: list[dict]) -> None:
    """Clinical plan sets: heard coughs (label + keyword per count) or reported symptoms (one
    keyword per symptom word start)."""
    tools = set(ctx.tools)
    if intent.task == "exhibited" or (intent.task == UNSUPPORTED and
                                      re.search(r"exhibit|audible|heard|cough(ed|ing)? (during|in)|show", low)):
        for lab in ("1 cough", "2 cough", "3 cough"):
            add(localize=windows[0] if windows else "full recording", label=lab,
                text_emb="coughing, clearing throat" if lab == "1 cough" else None,
                keyword="cough" if lab == "1 cough" else None)
        if "label" not in tools and "keyword" not in tools:
            sets[:] = sets[:1]
        return
    # word starts (the keyword tool matches "cough" in "coughing"), one set each
    terms = ["cough", "breath", "chest", "wheez", "throat", "sneez"][: max(1, int(ctx.params.max_sets))]
    for j, kwd in enumerate(terms):
        add(localize=windows[0] if windows else "full recording", keyword=kwd,
            text_emb=("respiratory symptoms: cough, shortness of breath, wheezing, chest tightness"
                      if j == 0 else None))
    if "keyword" not in tools:
        sets[:] = sets[:1]


def _song_sets(ctx, windows: list[str], roles: Sequence[str], add) -> None:
    """Song plan sets: one per named song (time), one per reference clip, else the window."""
    tools = set(ctx.tools)
    if len(windows) >= 2:
        # vector-only setups have no time tool: a generic aesthetic phrase acts as a
        # window-restricted similarity search (lyrics are often empty)
        for w, r in zip(windows[:2], ("A", "B")):
            add(localize=w, time=True, audio_emb=r if r in roles else None,
                text_emb=None if "time" in tools else "song with lyrics, melody and chorus",
                **_song_at(w, ctx))
    elif "A" in roles or "B" in roles:
        for r in ("A", "B"):
            if r in roles:
                # a lyric heard in the clip (offline ASR) is the keyword-only setups' handle;
                # with neither lyrics nor similarity tools the set falls back to the time tool
                lyric = _clip_keyword(ctx, r) if "keyword" in tools else None
                no_handle = not lyric and not ({"audio_emb", "domain_emb"} & tools)
                add(localize=windows[0] if windows else "full recording", audio_emb=r,
                    domain_emb=r, keyword=lyric, time=no_handle)
    else:
        add(localize=windows[0] if windows else "full recording", time=True)


def _emotion_sets(ctx, intent, windows: list[str], roles: Sequence[str], keyword, semantic, add) -> None:
    """Emotion plan sets: the reference emotion (E), one per speaker clip (A, B), else one set."""
    window = windows[0] if windows else "full recording"
    specific = bool(windows)
    if "E" in roles:
        emo = reference_label(ctx, "E")
        add(localize=window, label=emo, domain_emb="E",
            audio_emb="A" if "A" in roles else None, keyword=keyword, text_emb=semantic)
    elif "A" in roles and "B" in roles:
        for r in ("A", "B"):
            add(localize=window, audio_emb=r, text_emb=semantic, time=specific)
    else:
        is_change = intent.task == "change"
        add(localize=window, audio_emb="A" if "A" in roles else None, keyword=keyword,
            text_emb=semantic, time=is_change or specific or not (keyword or semantic or "A" in roles))


def intent_cues(intent) -> tuple[Optional[str], Optional[str]]:
    """``(keyword, semantic)`` search cues of an intent's ``keywords``: the longest content word
    (the keyword tool, robust to ASR) and all of them as one phrase (the text embedding).

    >>> from harp_lib.understand.intent import Intent
    >>> intent_cues(Intent("state", keywords=("vegetable garden", "open")))
    ('vegetable', 'vegetable garden open')
    """
    words = [w for k in intent.keywords for w in _content_words(k)]
    if not words:
        return None, None
    return max(words, key=len), " ".join(intent.keywords)


def plan_from_intent(ctx, intent, keyword: Optional[str] = None, semantic: Optional[str] = None) -> Plan:
    """The evidence sets of a question from its :class:`~.intent.Intent` (task, time phrases) and
    the search cues ``keyword`` / ``semantic``, restricted to the setup's tools: the one planning
    code of the rule planner and of the LLM planner's intent mode."""
    q, tools = ctx.query, set(ctx.tools)
    low = q.text.lower()
    roles = sorted(q.references)
    windows = list(intent.times)
    sets: list[dict] = []

    def add(**kw):
        clean = {k: v for k, v in kw.items()
                 if v is not None and v is not False and (k in ("localize", "start", "end") or k in tools)}
        clean.setdefault("localize", "full recording")
        sets.append(clean)

    if q.domain == "clinical":
        _clinical_sets(ctx, intent, windows, low, add, sets)
    elif q.domain == "song":
        _song_sets(ctx, windows, roles, add)
    else:
        _emotion_sets(ctx, intent, windows, roles, keyword, semantic, add)
    plan_sets, errs = repair_plan({"sets": sets}, tools=ctx.tools, roles=roles, domain=q.domain,
                                  max_sets=int(ctx.params.max_sets))
    if not plan_sets:
        return fallback_plan(ctx.tools, errs, ctx.params.empty_plan_fallback or "full recording")
    return Plan(sets=tuple(plan_sets), errors=tuple(errs))
