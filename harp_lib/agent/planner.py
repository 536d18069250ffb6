"""Retrieval plans: the JSON schema, parsing with repair, the LLM planner and the rule planner.

A plan is ``{"sets": [{"localize", "time", "keyword", "label", "text_emb", "audio_emb",
"domain_emb"}]}`` restricted to the setup's tools (HARP_REFERENCE §3.2).  Unlike the reference
code, whose failed ``json.loads`` silently became an empty plan, :func:`parse_plan` repairs what
it can (code fences, trailing prose, single quotes, trailing commas, string booleans, roles
written as "Snippet A", "Medium" for "Mid") and records every repair or drop in
``Plan.errors``; a plan left with no set falls back to one ``full recording`` set, saying so.

>>> p = parse_plan('```json\\n{"sets": [{"localize": "around 3 min", "label": "medium"}]}\\n``` done',
...                tools=("time", "keyword", "label"), roles=(), domain="song")
>>> p.sets[0].label, p.errors
('Mid', ('stripped code fence',))
>>> schema = plan_json_schema(("time", "audio_emb"), roles=("A",), domain="emotion")
>>> sorted(schema["properties"]["sets"]["items"]["properties"])
['audio_emb', 'localize', 'time']
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from harp_lib.config import TOOLS
from harp_lib.core.labels import EMOTIONS, RESPIRATORY_TERMS, TIERS, normalize_label
from harp_lib.core.schema import REFERENCE_ROLES, Plan, PlanSet, Query, SchemaError
from harp_lib.core.timespan import format_time
from harp_lib.understand.intent import UNSUPPORTED, analyze

__all__ = ["plan_json_schema", "parse_plan", "extract_json", "repair_plan", "fallback_plan",
           "RulePlanner", "LLMPlanner", "plan_from_intent", "intent_cues", "plan_prompt", "load_prompt", "TOOL_DESCRIPTIONS",
           "RESPIRATORY_TERMS"]

PROMPT_DIR = Path(__file__).with_name("prompts")

_ROLE_TOOLS = ("audio_emb", "domain_emb")
_STR_TOOLS = ("keyword", "label", "text_emb")



# ---------------------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------------------
def _label_schema(domain: Optional[str]) -> dict:
    if domain == "emotion":
        return {"type": ["string", "null"], "enum": [*EMOTIONS, None]}
    if domain == "song":
        return {"type": ["string", "null"], "enum": [*TIERS, None]}
    if domain == "clinical":
        return {"type": ["string", "null"], "pattern": "^(no cough|[1-9][0-9]* cough)$"}
    return {"type": ["string", "null"]}


def plan_json_schema(tools: Sequence[str], roles: Sequence[str] = REFERENCE_ROLES,
                     domain: Optional[str] = None, max_sets: int = 6,
                     windows: Optional[Sequence[str]] = None) -> dict:
    """JSON schema of a plan using only ``tools`` (for vLLM ``guided_json`` / ``response_format``).

    Reference-role fields accept only the roles this query has; ``label`` only the shared
    vocabulary of ``domain``.  ``windows``: the time phrases of the question text
    (:func:`harp_lib.understand.intent.time_mentions`); when given, ``localize`` is one of them or
    ``full recording`` (the 0.5B otherwise copied the prompt's example phrases, "12:30 to 15:00").

    >>> plan_json_schema(["time"], (), "emotion", 2, ["from 90 to 180 seconds"])["properties"]["sets"]["items"]["properties"]["localize"]
    {'type': 'string', 'enum': ['from 90 to 180 seconds', 'full recording']}
    """
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        raise ValueError(f"unknown tool(s) {unknown}; tools are {TOOLS}")
    props: dict[str, Any] = {"localize": {"type": "string", "minLength": 1,
                                          "description": "time window, e.g. 'around 3 min', "
                                                         "'40 to 95 seconds', 'the 4th song', 'full recording'"}}
    if windows:
        props["localize"] = {"type": "string", "enum": list(dict.fromkeys([*windows, "full recording"]))}
    for t in TOOLS:
        if t not in tools:
            continue
        if t == "time":
            props[t] = {"type": "boolean"}
        elif t == "label":
            props[t] = _label_schema(domain)
        elif t in _ROLE_TOOLS:
            props[t] = {"type": ["string", "null"], "enum": [*sorted(roles), None]}
        else:
            props[t] = {"type": ["string", "null"], "minLength": 1}
    return {
        "title": "plan",
        "type": "object",
        "properties": {"sets": {"type": "array", "minItems": 1, "maxItems": int(max_sets),
                                "items": {"type": "object", "properties": props,
                                          # every enabled tool must be decided (null / false when
                                          # unused): with optional tool fields the 0.5B wrote only
                                          # localize and "time": false, a plan with no search tool
                                          "required": ["localize", *[t for t in TOOLS if t in tools]],
                                          "additionalProperties": False}}},
        "required": ["sets"],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------------------------------
# Parsing and repair
# ---------------------------------------------------------------------------------------
def _balanced_object(s: str) -> Optional[str]:
    """The first balanced ``{...}`` (or ``[...]``) in ``s``, ignoring braces inside strings."""
    starts = [i for i in (s.find("{"), s.find("[")) if i >= 0]
    if not starts:
        return None
    i0 = min(starts)
    stack, in_str, esc, quote = [], False, False, ""
    for i in range(i0, len(s)):
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == quote:
                in_str = False
            continue
        if c in "\"'":
            in_str, quote = True, c
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return s[i0:i + 1]
    return None


def extract_json(text: str) -> tuple[Any, list[str]]:
    """Parse the first JSON value in an LLM reply; returns ``(value, repairs)``.

    Handles code fences, prose around the object, Python literals, single quotes and
    trailing commas.  Raises ``ValueError`` naming what was wrong when nothing parses.

    >>> extract_json("Sure! {'sets': [{'localize': 'full track', 'time': True,}]} Hope this helps")[0]
    {'sets': [{'localize': 'full track', 'time': True}]}
    """
    repairs: list[str] = []
    if not isinstance(text, str) or not text.strip():
        raise ValueError("empty planner output")
    s = text.strip()
    m = re.search(r"```(?:json|JSON)?\s*(.*?)```", s, re.S)
    if m:
        s = m.group(1).strip()
        repairs.append("stripped code fence")
    try:
        return json.loads(s), repairs
    except json.JSONDecodeError:
        pass
    obj = _balanced_object(s)
    if obj is None:
        raise ValueError(f"no JSON object in planner output: {text[:120]!r}")
    if obj != s:
        repairs.append("dropped text around the JSON object")
    try:
        return json.loads(obj), repairs
    except json.JSONDecodeError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", obj)
    fixed = re.sub(r"\bTrue\b", "true", fixed)
    fixed = re.sub(r"\bFalse\b", "false", fixed)
    fixed = re.sub(r"\bNone\b", "null", fixed)
    if "'" in fixed and '"' not in fixed:
        fixed = fixed.replace("'", '"')
    elif "'" in fixed:
        fixed = re.sub(r"'([^'\"]*)'", r'"\1"', fixed)
    try:
        val = json.loads(fixed)
    except json.JSONDecodeError as e:
        raise ValueError(f"planner output is not valid JSON ({e.msg} at column {e.colno}): "
                         f"{obj[:120]!r}") from None
    repairs.append("fixed JSON syntax (quotes / literals / trailing commas)")
    return val, repairs


def _as_bool(v: Any) -> Optional[bool]:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("true", "yes", "1", "false", "no", "0", ""):
        return v.strip().lower() in ("true", "yes", "1")
    return None


def _as_role(v: Any, roles: Sequence[str]) -> Optional[str]:
    if not isinstance(v, str):
        return None
    s = v.strip().upper()
    m = re.fullmatch(r"(?:\[)?(?:SNIPPET|SPEAKER|SONG|CLIP|ROLE|REF(?:ERENCE)?)?[\s_:-]*([ABE])(?:\])?", s)
    if m and m.group(1) in roles:
        return m.group(1)
    if s in ("EMOTION", "EMO") and "E" in roles:
        return "E"
    return None


def repair_plan(data: Any, *, tools: Sequence[str], roles: Sequence[str], domain: Optional[str],
                max_sets: int = 6) -> tuple[list[PlanSet], list[str]]:
    """Turn parsed JSON into valid :class:`PlanSet` s for the enabled tools; returns (sets, errors)."""
    errors: list[str] = []
    raw_sets = _raw_sets(data, errors)
    out: list[PlanSet] = []
    for i, raw in enumerate(raw_sets, 1):
        if len(out) >= max_sets:
            errors.append(f"kept the first {max_sets} sets, dropped {len(raw_sets) - max_sets}")
            break
        if not isinstance(raw, dict):
            errors.append(f"set {i}: not an object ({str(raw)[:60]}); dropped")
            continue
        ps = _repair_set(raw, i, tools, roles, domain, errors)
        if ps is not None:
            out.append(ps)
    return out, errors


def _raw_sets(data: Any, errors: list[str]) -> list:
    """The list of raw sets of a parsed plan (a bare list or a single set is read as the sets)."""
    if isinstance(data, list):
        data = {"sets": data}
        errors.append("top level was a list; read it as the sets")
    if isinstance(data, dict) and "sets" not in data and "localize" in data:
        data = {"sets": [data]}
        errors.append("top level was a single set; wrapped it in sets")
    if not isinstance(data, dict) or not isinstance(data.get("sets"), list):
        errors.append(f"plan has no 'sets' list (got {type(data).__name__}: {str(data)[:80]})")
        return []
    extra = sorted(set(data) - {"sets"})
    if extra:
        errors.append(f"ignored top-level field(s) {extra}")
    return data["sets"]


_WINDOW_FIELDS = ("localize", "start", "end", "start_sec", "end_sec")


def _repair_window(raw: dict, i: int, errors: list[str]) -> dict[str, Any]:
    """``localize`` (a number: seconds; missing: the full recording) and a complete numeric window."""
    kw: dict[str, Any] = {}
    loc = raw.get("localize")
    if isinstance(loc, (int, float)) and not isinstance(loc, bool):
        loc = f"at {loc} seconds"
        errors.append(f"set {i}: localize was a number; read it as seconds")
    if not isinstance(loc, str) or not loc.strip():
        loc = "full recording"
        errors.append(f"set {i}: missing localize; used 'full recording'")
    kw["localize"] = loc.strip()
    for k in _WINDOW_FIELDS[1:]:
        v = raw.get(k)
        if v is not None:
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0:
                kw[k.replace("_sec", "")] = float(v)
            else:
                errors.append(f"set {i}: ignored non-numeric {k}={v!r}")
    if ("start" in kw) != ("end" in kw) or ("start" in kw and kw["end"] <= kw["start"]):
        errors.append(f"set {i}: ignored incomplete/empty numeric window")
        kw.pop("start", None)
        kw.pop("end", None)
    return kw


_DROP = object()


def _repair_tool(k: str, v: Any, i: int, roles: Sequence[str], domain: Optional[str], errors: list[str]) -> Any:
    """The value of enabled tool ``k`` read from ``v`` (a boolean, a role, a string, a label), or
    :data:`_DROP` with the reason in ``errors``."""
    if k == "time":
        b = _as_bool(v)
        if b is None:
            errors.append(f"set {i}: time={v!r} is not a boolean; dropped")
            return _DROP
        if not isinstance(v, bool):
            errors.append(f"set {i}: time={v!r} read as {b}")
        return b
    if k in _ROLE_TOOLS:
        r = _as_role(v, roles)
        if r is None:
            errors.append(f"set {i}: {k}={v!r} is not an available reference role ({', '.join(roles) or 'none'}); dropped")
            return _DROP
        if r != v:
            errors.append(f"set {i}: {k}={v!r} read as {r!r}")
        return r
    if isinstance(v, list):
        v = " ".join(str(x) for x in v if x is not None)
        errors.append(f"set {i}: {k} was a list; joined it")
    if isinstance(v, (int, float, bool)):
        v = str(v)
    if not isinstance(v, str) or not v.strip():
        errors.append(f"set {i}: {k}={v!r} is not a string; dropped")
        return _DROP
    v = v.strip()
    if k == "label" and domain:
        lab = normalize_label(domain, v, strict=False)
        if lab is None:
            errors.append(f"set {i}: label {v!r} is not in the {domain} vocabulary; dropped")
            return _DROP
        v = lab
    return v


def _repair_set(raw: dict, i: int, tools: Sequence[str], roles: Sequence[str], domain: Optional[str],
                errors: list[str]) -> Optional[PlanSet]:
    """One valid :class:`PlanSet` from a raw set (None: dropped, the reason in ``errors``)."""
    kw = _repair_window(raw, i, errors)
    for k, v in raw.items():
        if k in _WINDOW_FIELDS:
            continue
        if k not in TOOLS:
            errors.append(f"set {i}: unknown field {k!r} dropped")
            continue
        if v is None or v is False or v == "":
            continue
        if k not in tools:
            errors.append(f"set {i}: tool {k!r} is not enabled in this setup; dropped")
            continue
        val = _repair_tool(k, v, i, roles, domain, errors)
        if val is not _DROP:
            kw[k] = val
    try:
        ps = PlanSet(**kw)
    except SchemaError as e:
        errors.append(f"set {i}: {e}; dropped")
        return None
    if not ps.tools_used() and "time" in tools:
        ps = ps.replace(time=True)
        errors.append(f"set {i}: no tool requested; set time=true")
    return ps


def plan_fell_back(plan: Plan) -> bool:
    """Whether the planner's reply held no usable set (a refusal, prose, a JSON that is no plan),
    so the plan is the fallback: not a repaired plan, and never worth caching.

    >>> plan_fell_back(parse_plan("I am sorry, I cannot help with that.", tools=("time",)))
    True
    """
    return any(e.startswith(("no usable set;", "plan has no usable set")) for e in plan.errors)


def fallback_plan(tools: Sequence[str], errors: Iterable[str], localize: str = "full recording") -> Plan:
    """The plan used when nothing usable came back: one ``localize`` set, errors kept."""
    ps = PlanSet(localize=localize, time="time" in tools)
    return Plan(sets=(ps,), errors=tuple(errors) + (f"no usable set; fell back to one '{localize}' set",))


def parse_plan(text: str, *, tools: Sequence[str], roles: Sequence[str] = REFERENCE_ROLES,
               domain: Optional[str] = None, max_sets: int = 6,
               fallback: Optional[str] = "full recording") -> Plan:
    """Parse and repair an LLM plan; never returns a silent empty plan.

    >>> parse_plan("no idea", tools=("time",)).errors[-1]
    "no usable set; fell back to one 'full recording' set"
    """
    try:
        data, errs = extract_json(text)
    except (ValueError, RecursionError) as e:       # RecursionError: JSON nested thousands deep
        errs = [str(e)[:300]]
        sets: list[PlanSet] = []
    else:
        sets, more = repair_plan(data, tools=tools, roles=roles, domain=domain, max_sets=max_sets)
        errs = errs + more
    if not sets:
        if fallback:
            return fallback_plan(tools, errs, fallback)
        return Plan(sets=(), errors=tuple(errs) + ("plan has no usable set",))
    return Plan(sets=tuple(sets), errors=tuple(errs))


# ---------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------
#: One line per tool (HARP_REFERENCE §3.2 table), per domain; {roles} = the query's roles.
TOOL_DESCRIPTIONS: dict[str, dict[str, str]] = {
    "emotion": {
        "time": "time: true = return every segment in the window (use when the whole window matters)",
        "keyword": "keyword: a word or short phrase to match in the transcript",
        "label": f"label: an emotion class, exactly one of {', '.join(EMOTIONS)}",
        "text_emb": "text_emb: key phrases or the topic, matched by meaning against the transcript",
        "audio_emb": "audio_emb: speaker-voice similarity to a reference clip; one of: {roles}",
        "domain_emb": "domain_emb: emotion similarity to a reference clip; one of: {roles}",
    },
    "clinical": {
        "time": "time: true = return every turn in the window",
        "keyword": "keyword: a clinical term, symptom, body part or medication in the transcript",
        "label": "label: cough count of a segment, exactly 'no cough' or '<n> cough' (e.g. '1 cough')",
        "text_emb": "text_emb: a symptom or clinical phrase, matched by meaning",
        "audio_emb": "audio_emb: acoustic similarity to a reference clip; one of: {roles}",
        "domain_emb": "domain_emb: not available in this domain (leave null)",
    },
    "song": {
        "time": "time: true = return every section in the window",
        "keyword": "keyword: a lyric phrase",
        "label": f"label: quality tier, exactly one of {', '.join(TIERS)}",
        "text_emb": "text_emb: a verbatim lyric or thematic phrase, matched by meaning",
        "audio_emb": "audio_emb: acoustic similarity to a reference clip; one of: {roles}",
        "domain_emb": "domain_emb: music content/style similarity to a reference clip; one of: {roles}",
    },
}


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    """A prompt template from ``harp_lib/agent/prompts/<name>.txt``."""
    p = PROMPT_DIR / f"{name}.txt"
    if not p.exists():
        raise FileNotFoundError(f"{p}: no prompt template {name!r} (have: "
                                f"{', '.join(sorted(q.stem for q in PROMPT_DIR.glob('*.txt')))})")
    return p.read_text(encoding="utf-8")


def plan_prompt(query: Query, *, tools: Sequence[str], duration: float,
                clip_info: str = "", max_sets: int = 6, windows: Sequence[str] = ()) -> str:
    """Fill ``prompts/plan_<domain>.txt`` for one query (tools restricted to the setup)."""
    roles = ", ".join(sorted(query.references)) or "none"
    descs = TOOL_DESCRIPTIONS[query.domain]
    tool_lines = "\n".join("- " + descs[t].format(roles=roles) for t in TOOLS if t in tools)
    example = {"localize": "..."}
    for t in TOOLS:
        if t in tools:
            example[t] = False if t == "time" else None
    return load_prompt(f"plan_{query.domain}").format(
        task=load_prompt(f"task_{query.domain}").strip(),
        tools=tool_lines,
        duration=f"Track duration: {format_time(duration)} ({duration:.0f} sec total)" + (
            "\nTime windows named in the query (use them as localize): " + "; ".join(windows) if windows else ""),
        roles=roles,
        clip_info=("Reference clips (preprocessed): " + clip_info) if clip_info else "",
        example=json.dumps({"sets": [example]}),
        max_sets=max_sets,
        query=query.text,
    )


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
        from harp_lib.agent.llm_intent import llm_intent
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
        from harp_lib.retrieval.references import clip_info
        q = ctx.query
        max_sets = int(ctx.p("max_sets"))
        from harp_lib.understand.intent import time_mentions
        windows = time_mentions(q.text)            # from the question text only
        if q.domain == "song":                     # "the one playing at 2:04" -> the detected song holding it
            windows = [_song_phrase(w, ctx) for w in windows]
        schema = plan_json_schema(ctx.tools, tuple(q.references), q.domain, max_sets, windows)
        prompt = plan_prompt(q, tools=ctx.tools, duration=ctx.recording.duration,
                             clip_info=clip_info(ctx), max_sets=max_sets, windows=windows)
        r = self.client.complete([prompt], json_schema=schema, max_tokens=int(ctx.p("plan_max_tokens")))
        plan = parse_plan(r.text, tools=ctx.tools, roles=tuple(q.references), domain=q.domain,
                          max_sets=max_sets, fallback=ctx.p("empty_plan_fallback"))
        if plan_fell_back(plan) and callable(getattr(self.client, "forget", None)):
            self.client.forget(r)                  # a refusal is not replayed once the server is fixed
        return plan, {"planner": self.name, "planner_model": r.model_id, "planner_cached": r.cached,
                      "raw_plan": r.text}


_QUOTE = re.compile(r"[\"“”]([^\"“”]{2,200})[\"“”]")
_TOPIC = re.compile(r"\b(?:talking|talked|speaking|spoke|discussing|discussed|about|on the topic of|"
                    r"regarding|while discussing)\s+(?:about\s+)?(.+?)(?:\s+and\s+(?:mentioned|said)\b|[,.;?]|$)",
                    re.I)
_STOPWORDS = frozenset("the a an and or of to in on at for is was were be it this that with as by from "
                       "about did does do their they them he she his her its our your my when what which "
                       "who how while than then there here".split())
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


def _song_at(phrase: str, ctx) -> dict:
    """"the song playing around 4 minutes": the detected song holding that time, as numeric bounds."""
    if not phrase.startswith("around") or not ctx.songs:
        return {}
    from harp_lib.core.timespan import LocalizeError, localize
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
    from harp_lib.core.timespan import ordinal
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
    terms = ["cough", "breath", "chest", "wheez", "throat", "sneez"][: max(1, int(ctx.p("max_sets")))]
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
    from harp_lib.retrieval.references import reference_label
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
        intent = analyze(text, q.domain, sorted(q.references))      # from the text: never q.query_type
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
                                  max_sets=int(ctx.p("max_sets")))
    if not plan_sets:
        return fallback_plan(ctx.tools, errs, ctx.p("empty_plan_fallback") or "full recording")
    return Plan(sets=tuple(plan_sets), errors=tuple(errs))
