"""The planner's prompt: one line per enabled tool, the domain's plan template filled for a query.

Templates live in ``harp_lib/agent/prompts/<name>.txt`` (:func:`load_prompt`, also used by the
answerer).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from harp_lib.config import TOOLS
from harp_lib.core.labels import EMOTIONS, TIERS
from harp_lib.core.schema import Query
from harp_lib.core.timespan import format_time

__all__ = ["plan_prompt", "load_prompt", "TOOL_DESCRIPTIONS"]

PROMPT_DIR = Path(__file__).with_name("prompts")


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
