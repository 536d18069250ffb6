"""LLM judges: the three verdicts asked of a model through :mod:`harp_lib.llm`.

One set of prompts (``harp_lib/evaluate/prompts/*.txt``, package data), temperature 0, a
structured verdict ``{"verdict": "YES"|"NO", "reason": ...}`` requested with a JSON schema, and
a robust parser for models that ignore the schema (:func:`parse_verdict`, the paper's §5.4
order).  Every :class:`~harp_lib.core.schema.Judgement` records the model id the server reported and
:func:`prompts_hash`.  Responses are cached on disk by the client (``evaluate.llm_cache_dir``),
so re-running a judge costs nothing.

The faithful prompt shows the evidence exactly as the answerer saw it
(:func:`harp_lib.agent.evidence.render_evidence` with the setup's ``strip_domain``) and says
whether the system also heard audio clips (``Setup.attach_audio``), so A5/A7 claims about audible
content inside the clips are not counted as invented.

>>> parse_verdict('{"verdict": "NO", "reason": "wrong emotion"}')
(0, 'wrong emotion')
>>> parse_verdict("Reasoning...\\nFinal Answer: **YES**")[0]
1
"""
from __future__ import annotations

import hashlib
import json
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional

from harp_lib import tasks
from harp_lib.agent.evidence import render_evidence
from harp_lib.core.answer_format import split_rationale
from harp_lib.config import BackendError, register
from harp_lib.core.schema import Judgement, Query
from harp_lib.llm import LLMError, make_client
from harp_lib.tasks.base import num as _num
from harp_lib.evaluate.judge import JudgeInput, Verdict, combine

__all__ = ["VERDICT_SCHEMA", "PROMPT_FILES", "load_prompts", "prompts_hash", "parse_verdict",
           "ground_truth_fields", "render_ground_truth", "type_rules", "build_prompts", "LLMJudge"]

VERDICT_SCHEMA: dict = {
    "title": "verdict",
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["YES", "NO"]},
                   "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
PROMPT_FILES = ("answer.txt", "factual.txt", "faithful.txt", "rules.txt")


@lru_cache(maxsize=1)
def load_prompts() -> dict[str, str]:
    """The prompt templates, keyed by file stem (``answer``, ``factual``, ``faithful``, ``rules``)."""
    base = resources.files("harp_lib.evaluate") / "prompts"
    return {f.rsplit(".", 1)[0]: (base / f).read_text(encoding="utf-8") for f in PROMPT_FILES}


def prompts_hash() -> str:
    """sha256 (first 12 hex digits) over all judge templates: which prompts produced a verdict.

    >>> len(prompts_hash())
    12
    """
    h = hashlib.sha256()
    for name, text in sorted(load_prompts().items()):
        h.update(name.encode() + b"\0" + text.encode("utf-8") + b"\0")
    return h.hexdigest()[:12]


_MD = str.maketrans("", "", "*_`#>\"'.!:")


def parse_verdict(text: str) -> tuple[Optional[int], str]:
    """Read a YES/NO verdict: ``(1 | 0, reason)``, or ``(None, why)`` when there is none.

    Order: a JSON object with ``verdict``; an explicit ``Answer:`` / ``Final Answer:`` /
    ``Verdict:`` followed by YES/NO; the last line that is only YES or NO (markdown ignored);
    the first upper-case YES/NO token; a reply starting with yes/no.

    >>> parse_verdict("NO. The time is outside the window.")
    (0, 'NO. The time is outside the window.')
    >>> parse_verdict("I cannot tell.")
    (None, 'no YES/NO verdict in the reply')
    """
    t = (text or "").strip()
    # 1. JSON (possibly inside a code fence or after some prose)
    for m in re.finditer(r"\{.*?\}", t, flags=re.S):
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("verdict"), str):
            v = obj["verdict"].strip().upper().translate(_MD)
            if v in ("YES", "NO"):
                return int(v == "YES"), str(obj.get("reason", "")).strip()
    m = re.search(r'"verdict"\s*:\s*"\s*(YES|NO)\b', t, flags=re.I)
    if m:
        r = re.search(r'"reason"\s*:\s*"([^"]*)', t)
        return int(m.group(1).upper() == "YES"), (r.group(1) if r else t)
    # 2. explicit answer line
    m = None
    for m in re.finditer(r"(?:final\s+answer|answer|verdict)\s*\**\s*[:：]\s*[*_`\s]*(YES|NO)\b", t, flags=re.I):
        pass
    if m:
        return int(m.group(1).upper() == "YES"), t
    # 3. last line that is only YES/NO
    for line in reversed(t.splitlines()):
        w = line.strip().translate(_MD).strip().upper()
        if w in ("YES", "NO"):
            return int(w == "YES"), t
    # 4. first upper-case token, 5. a reply that starts with yes/no
    m = re.search(r"\b(YES|NO)\b", t) or re.match(r"\W*(yes|no)\b", t, flags=re.I)
    if m:
        return int(m.group(1).upper() == "YES"), t
    return None, "no YES/NO verdict in the reply"


class _Fields(dict):
    def __missing__(self, key):
        return "?"


def ground_truth_fields(query: Query, tol: float) -> dict:
    """Values for the placeholders of ``rules.txt`` and the ground-truth summary."""
    gt = dict(query.ground_truth)
    f = _Fields({k: _num(v) for k, v in gt.items() if not isinstance(v, (dict, list))})
    f["tol"] = _num(float(tol))
    f["answer_gt"] = str(gt.get("answer", "?"))
    if "t0" in gt and "t1" in gt:
        win = tasks.get(query.query_type).accept_window(query, tol)
        if win is not None:
            f["accept_lo"], f["accept_hi"] = f"{win[0]:.1f}", f"{win[1]:.1f}"
    return f


def render_ground_truth(query: Query, tol: float) -> str:
    """A readable ground-truth summary for the judge prompts (from ``ground_truth``/``judge_info``).

    >>> from harp_lib.core.schema import Query
    >>> q = Query("q", "emotion", "r", "locate", "?", {"t0": 10.0, "t1": 14.0, "emotion": "Angry", "quote": "no!"})
    >>> print(render_ground_truth(q, 3.0))
    emotion: Angry
    ground-truth window: 10.0-14.0 s (accept window 7.0-17.0 s)
    reference text: "no!"
    """
    return "\n".join(tasks.get(query.query_type).ground_truth_lines(query, tol))


def type_rules(query_type: str) -> str:
    """The answer-grading rule of one query type (a section of ``rules.txt``, else the task's
    ``judge_rules``)."""
    text = load_prompts()["rules"]
    m = re.search(rf"^## {re.escape(query_type)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    if not m and query_type in tasks.names() and tasks.get(query_type).judge_rules:
        return tasks.get(query_type).judge_rules.strip()
    if not m:
        raise KeyError(f"prompts/rules.txt has no section '## {query_type}'")
    return m.group(1).strip()


def _audio_note(setup) -> str:
    if setup.attach_audio:
        return ("The system also heard one audio clip per evidence set (spanning that set's "
                "segments) and the reference snippets: statements about what is audible inside "
                "those clips count as grounded.")
    return ("The system heard no audio: statements about the sound that the text evidence does "
            "not support are not grounded.")


def build_prompts(inp: JudgeInput, tol: float) -> dict[str, str]:
    """The filled ``answer``, ``factual`` and (unless ``skip_faithful``) ``faithful`` prompts."""
    p, q = inp.prediction, inp.query
    decision, rationale = split_rationale(p.answer, p.rationale)
    tpl = load_prompts()
    f = ground_truth_fields(q, tol)
    common = {"query_type": q.query_type, "query_text": q.text, "answer": decision or "(empty)",
              "rationale": rationale or "(none)", "ground_truth": render_ground_truth(q, tol),
              "accept_lo": f["accept_lo"], "accept_hi": f["accept_hi"]}
    out = {"answer": tpl["answer"].format_map(_Fields(common, rules=type_rules(q.query_type).format_map(f))),
           "factual": tpl["factual"].format_map(_Fields(common))}
    if not inp.setup.skip_faithful:
        ev = render_evidence(p.evidence, strip_domain=inp.setup.strip_domain)
        out["faithful"] = tpl["faithful"].format_map(_Fields(common, evidence=ev,
                                                            audio_note=_audio_note(inp.setup)))
    return out


@register("judge", "llm")
class LLMJudge:
    """A judge backed by an LLM client (``complete(parts, json_schema=..) -> LLMResponse``).

    ``client_spec`` is the merged ``llm:`` + ``evaluate.llm_judges.<name>`` mapping handed to
    :func:`harp_lib.llm.make_client`; tests pass a ready ``client`` instead.
    """

    def __init__(self, *, name: str, client=None, client_spec: Optional[dict] = None,
                 root: Optional[Path] = None, locate_tolerance_sec: float = 3.0):
        self.name = name
        self.tol = float(locate_tolerance_sec)
        if client is None:
            if client_spec is None:
                raise BackendError(f"LLM judge {name!r} needs client_spec (evaluate.llm_judges.{name})")
            client = make_client(client_spec, root=root)
        self.client = client
        self.model_id = getattr(client, "model_id", "") or ""
        self.prompt_hash = prompts_hash()

    def _ask(self, prompt: str) -> tuple[Verdict, Optional[str], str]:
        try:
            r = self.client.complete([prompt], json_schema=VERDICT_SCHEMA)
        except LLMError as e:   # server down after its retries: recorded (and retried on resume)
            return Verdict(0, f"no verdict: {e}"[:500]), f"judge LLM failed ({e})"[:500], self.model_id
        value, reason = parse_verdict(r.text)
        model = getattr(r, "model_id", "") or self.model_id
        if value is None:
            return Verdict(0, f"unparseable reply counted as NO: {r.text[:200]!r}"), \
                "unparseable judge reply", model
        return Verdict(value, reason[:500]), None, model

    def judge(self, inp: JudgeInput) -> Judgement:
        prompts = build_prompts(inp, self.tol)
        verdicts, errors, model = {}, [], self.model_id
        for key, prompt in prompts.items():
            v, err, model = self._ask(prompt)
            verdicts[key] = v
            if err:
                errors.append(f"{key}: {err}")
        if inp.prediction.error:
            errors.insert(0, f"prediction error: {inp.prediction.error}")
        return combine(self.name, model, self.prompt_hash, inp.setup, inp.query.query_id,
                       verdicts["answer"], verdicts["factual"], verdicts.get("faithful"),
                       error="; ".join(errors) or None)
