"""The JSON schema of a retrieval plan, restricted to the setup's tools (for a grammar).

A plan is ``{"sets": [{"localize", "time", "keyword", "label", "text_emb", "audio_emb",
"domain_emb"}]}`` restricted to the setup's tools (HARP_REFERENCE §3.2); reference-role fields
accept only the query's roles, ``label`` only the domain's vocabulary.

>>> schema = plan_json_schema(("time", "audio_emb"), roles=("A",), domain="emotion")
>>> sorted(schema["properties"]["sets"]["items"]["properties"])
['audio_emb', 'localize', 'time']
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from harp_lib.config import TOOLS
from harp_lib.core.labels import EMOTIONS, TIERS
from harp_lib.core.schema import REFERENCE_ROLES

__all__ = ["plan_json_schema"]

_ROLE_TOOLS = ("audio_emb", "domain_emb")
_STR_TOOLS = ("keyword", "label", "text_emb")


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
    (:func:`harp_lib.understand.time_words.time_mentions`); when given, ``localize`` is one of them or
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
