"""What a *text* LLM answerer gets instead of audio: what the offline labelers heard in the clips.

The paper's answerer is an audio LLM that listens to the attached ``[Set N]`` and ``[Snippet X]``
clips.  The offline agent's model (:mod:`harp_lib.llm.local`) reads text only, so for every
setup that attaches audio (A4-A7) the evidence clips are run through the domain's offline
labelers (``extract.backends.labelers``; for clinical audio-only setups also the offline ASR)
the result is written next to each segment as ``heard: ...`` under a clearly marked header:
*machine listening of the clips, not metadata*.  Metadata setups (A1-A3) get no heard labels;
audio setups (A4, A6) only times and heard labels; multimodal setups (A5, A7) both
(:func:`compact_labels`: the labels that decide answers, no tool scores, so a text model's answer
prompt stays short on CPU).  The labels come from
:func:`harp_lib.agent.multimodal.heard_labels`, the same single labelling pass per clip and
query that the rule answerer reads.  The query's reference clips are described the same way
(:func:`~harp_lib.retrieval.references.clip_info`).  Nothing here reads ``query_type`` or ground
truth: what is heard depends on the domain, the setup and the evidence only.

>>> HEARD_HEADER.split(":")[0]
'HEARD IN THE ATTACHED AUDIO CLIPS (offline machine listening, not metadata; may be wrong)'
"""
from __future__ import annotations

import copy
import json
import re

from harp_lib.agent.evidence import render_labels
from harp_lib.core.answer_format import split_rationale

__all__ = ["answer_schema", "RATIONALE_CHARS", "compact_labels", "HEARD_HEADER", "ANSWER_SCHEMA", "parse_answer", "VERBOSE_LABELS"]

#: The reply shape of a text answerer (decision first, then the cited rationale); lengths keep a
#: whole reply under ~110 tokens, inside ``llm_offline.max_tokens`` (256).
ANSWER_SCHEMA: dict = {
    "title": "answer", "type": "object", "additionalProperties": False, "required": ["answer", "rationale"],
    "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 60,
                              "description": "the decision only: an emotion, rising/falling/none, A/B/tie, "
                                            "Yes/No, or a time m:ss with the emotion"},
                   "rationale": {"type": "string", "maxLength": 300,
                                 "description": "cite time ranges like [12.4s–17.1s], speakers and labels"}}}


#: The rationale of the text answerer's reply, in characters (~12 tokens: decoding costs ~0.1
#: CPU-s a token on one thread; 120 characters made the answer ~4.5 of the ~13.5 CPU-s a question
#: cost, issue 30).  The reply is ``{"rationale", "answer"}`` in that order.
RATIONALE_CHARS = 48


def answer_schema(choices=None) -> dict:
    """:data:`ANSWER_SCHEMA` with the ``answer`` field limited to ``choices`` (an enum; None: free
    text) and a :data:`RATIONALE_CHARS` rationale.

    >>> s = answer_schema(["A", "B"]); s["properties"]["answer"], list(s["properties"])
    ({'type': 'string', 'enum': ['A', 'B']}, ['rationale', 'answer'])
    """
    s = copy.deepcopy(ANSWER_SCHEMA)
    props = s["properties"]
    props["rationale"]["maxLength"] = RATIONALE_CHARS
    if choices:
        props["answer"] = {"type": "string", "enum": list(choices)}
    # rationale first: the 0.5B decides better after copying the deciding fact (measured: 4/4
    # swapped-evidence probes right, against 2/4 with the answer first)
    s["properties"] = {"rationale": props["rationale"], "answer": props["answer"]}
    s["required"] = ["rationale", "answer"]
    s["x-keep-order"] = True
    return s


def parse_answer(text: str) -> tuple[str, str]:
    """``(answer, rationale)`` of a reply under :data:`ANSWER_SCHEMA`; a reply cut short or not JSON
    falls back to the "Rationale:" split.

    >>> parse_answer('{"answer": "Happy", "rationale": "[1.0s–2.0s] primary=Happy"}')
    ('Happy', '[1.0s–2.0s] primary=Happy')
    >>> parse_answer('{"answer": "No", "rationale": "none of the tur')
    ('No', 'none of the tur')
    """
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

#: Label keys left out of the text answerer's compact evidence: per-class score lists, the
#: song's per-chunk aesthetic scores, and the clinical labeler's in-clip event times and symptom
#: word positions (the primary class, A/V/D, counts, events, symptoms and ``overall`` stay:
#: they are what the answers are decided on).  Empty values are left out too.
VERBOSE_LABELS = ("scores", "chunk_scores", "event_times", "symptom_hits")


def compact_labels(labels) -> str:
    """``render_labels`` without :data:`VERBOSE_LABELS`.

    >>> compact_labels({"primary": "High", "overall": 3.66, "chunk_scores": {"Clarity": 3.0}, "scores": {"a": 1}})
    'primary=High, overall=3.66'
    >>> compact_labels({"primary": "no cough", "cough_count": 0, "events": [], "event_times": []})
    'primary=no cough, cough_count=0'
    """
    return render_labels({k: v for k, v in dict(labels or {}).items()
                          if k not in VERBOSE_LABELS and v is not None and v != [] and v != {}})
