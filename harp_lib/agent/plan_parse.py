"""Parsing an LLM's retrieval plan, with repair, and the fallback plan.

Unlike the reference code, whose failed ``json.loads`` silently became an empty plan,
:func:`parse_plan` repairs what it can (code fences, trailing prose, single quotes, trailing
commas, string booleans, roles written as "Snippet A", "Medium" for "Mid") and records every
repair or drop in ``Plan.errors``; a plan left with no set falls back to one ``full recording``
set, saying so.

>>> p = parse_plan('```json\\n{"sets": [{"localize": "around 3 min", "label": "medium"}]}\\n``` done',
...                tools=("time", "keyword", "label"), roles=(), domain="song")
>>> p.sets[0].label, p.errors
('Mid', ('stripped code fence',))
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional, Sequence

from harp_lib.agent.plan_schema import _ROLE_TOOLS
from harp_lib.config import TOOLS
from harp_lib.core.labels import normalize_label
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import REFERENCE_ROLES, Plan, PlanSet

__all__ = ["parse_plan", "extract_json", "repair_plan", "fallback_plan", "plan_fell_back"]


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
