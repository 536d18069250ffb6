"""The LLM fills the typed :class:`~harp_lib.understand.intent.Intent` of a question, under a grammar.

The reply is the Intent's fields only, on one short line (~5-20 tokens; a free JSON plan of
evidence sets is ~60-95)::

    change + valence t=T1 k=new train line
    TASK   POLARITY DIMENSION  [t=TIMES] [o=ORDINALS] [s=SPEAKERS] [a=y: absence] [k=KEYWORDS]

decoded under an LLGuidance grammar (:func:`intent_grammar`, llm backend ``local``): the task is
one of the recording type's tasks and question kinds (or ``unsupported``), the time windows are
the time phrases the rule parse found in the text (``T1``, ``T2``: what the model picks, not
what it copies) or a phrase of a shape :func:`harp_lib.core.timespan.localize` reads.

The prompt (``prompts/intent.txt``) starts with a fixed head (the field guide and worked
examples), the same bytes for every question of every domain and every setup, so llama.cpp
evaluates it once per process and reuses its KV cache for every later question (prefix reuse);
only the recording type, the reference roles, the time phrases and the question follow it.  The
prompt does not name the setup, so A1-A5 share one reply (the reply cache is keyed by the prompt).

:func:`reconcile` checks the LLM's intent against the rule parse
(:func:`harp_lib.tasks.read_question`): where their time spans disagree and the text holds an
explicit range or clock time, the rule parse's spans win; a time phrase no parser reads is dropped.

>>> it = parse_line("change - arousal t=T1 k=new train line", ["from 90 to 180 seconds"])
>>> it.task, it.polarity, it.dimension, it.times, it.keywords
('change', -1, 'arousal', ('from 90 to 180 seconds',), ('new train line',))
>>> re.fullmatch(LINE, "position + none t=T1,T2 o=12,1") is not None
True
"""
from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.core.schema import QUERY_TYPE_DOMAIN
from harp_lib.core.timespan import LocalizeError, localize
from harp_lib.understand.intent import UNSUPPORTED, Intent
from harp_lib.tasks import question_kinds, read_question


@lru_cache(maxsize=None)
def _template() -> str:
    """``prompts/intent.txt`` (read here, not through the planner: the planner imports this module)."""
    return (Path(__file__).with_name("prompts") / "intent.txt").read_text(encoding="utf-8")

__all__ = ["intent_grammar", "intent_prompt", "intent_shots", "parse_line", "reconcile", "llm_intent", "domain_tasks",
           "PHRASE", "LINE", "INTENT_MAX_TOKENS"]

#: A time phrase the model may write itself (what :func:`harp_lib.core.timespan.localize` reads).
PHRASE = (r"around [0-9]{1,5} seconds|from [0-9]{1,5} to [0-9]{1,5} seconds|the (first|last) [0-9]{1,2} minutes|"
          r"the (first|last) minute|the ([1-9][0-9]?(st|nd|rd|th)|last) song")
_KW = r"[a-z][a-z' ]{0,22}[a-z]"
_INT = r"-?[0-9]{1,2}"
#: A whole reply (only replies matching it are cached): the fields a question does not name are left out.
LINE = (rf"[a-z_]+ [+-] (valence|arousal|dominance|none)( t=(T[1-4]|{PHRASE})(,(T[1-4]|{PHRASE}))?)?"
        rf"( o={_INT}(,{_INT})?)?( s={_INT}(,{_INT})?)?( a=y)?( k={_KW}(,{_KW}){{0,2}})?")

#: Token budget of one intent reply (a line is ~5-20 tokens).
INTENT_MAX_TOKENS = 48

_EXPLICIT = re.compile(r"\d{1,2}:\d{2}|\b(?:from|between)\b[^?.]*\d[^?.]*\b(?:to|and|until|till|through)\b\s*\d|"
                       r"\d\s*(?:-|to)\s*\d+\s*(?:s|sec|seconds?|min|minutes?)\b")


#: The benchmark tasks a question with these reference roles can be (the clips say what is compared).
_ROLE_TASKS = {("A", "B"): ("comparison", "audio"), ("A", "E"): ("locate", "locate_hard"), ("E",): ("locate_hard",),
               ("A",): ("state", "change", "locate"), (): ("state", "change", "reported", "exhibited", "time",
                                                           "position")}


def domain_tasks(domain: str, roles: Sequence[str] = ()) -> list[str]:
    """The tasks the LLM may choose for a question on a recording of ``domain`` with reference
    clips ``roles``: the domain's benchmark tasks that take such clips, then (without clips) the
    question kinds about a user's own recording that read this domain (:mod:`harp_lib.tasks.recording`).

    >>> domain_tasks("emotion", ("A", "B")), domain_tasks("song", ("A", "B"))
    (['comparison'], ['audio'])
    """
    key = tuple(sorted(set(roles)))
    fits = _ROLE_TASKS.get(key, tuple(QUERY_TYPE_DOMAIN))
    out = [t for t, d in QUERY_TYPE_DOMAIN.items() if d == domain and t in fits]
    if not key:
        out += [k.name for k in question_kinds() if domain in k.domains]
    return out


def intent_grammar(tasks: Sequence[str], n_times: int) -> str:
    """The LLGuidance grammar of one reply line (``tasks`` + ``unsupported``; ``T1..Tn`` the
    question's time phrases)."""
    def alts(xs):
        return " | ".join(f'"{x}"' for x in xs)
    tref = alts([f"T{i}" for i in range(1, min(n_times, 4) + 1)] + []) if n_times else ""
    return "\n".join([
        "%llguidance {}",
        'start: TASK " " POL " " DIM (" t=" times)? (" o=" ints)? (" s=" ints)? (" a=y")? (" k=" kws)?',
        f"TASK: {alts([*dict.fromkeys(tasks), UNSUPPORTED])}",
        'POL: "+" | "-"',
        'DIM: "valence" | "arousal" | "dominance" | "none"',
        'times: tref ("," tref)?',
        f"tref: {tref + ' | ' if tref else ''}PHRASE",
        f"PHRASE: /{PHRASE}/",
        'ints: INT ("," INT)?',
        f"INT: /{_INT}/",
        'kws: KW ("," KW)? ("," KW)?',
        f"KW: /{_KW}/"])


def intent_shots() -> list[tuple[str, str]]:
    """The worked examples of ``prompts/intent.txt`` as (user, assistant) turns, the field guide
    at the head of the first user turn: the same bytes for every question (prefix reuse)."""
    blocks = [b.strip() for b in _template().split("\n\n") if b.strip()]
    guide, shots = blocks[0], []
    for b in blocks[1:-1]:
        lines = b.splitlines()
        for k in range(0, len(lines) - 2, 3):
            shots.append(("\n".join(lines[k:k + 2]), lines[k + 2]))
    return [(guide + "\n\n" + shots[0][0], shots[0][1]), *shots[1:]]


def intent_prompt(text: str, domain: str, roles: Sequence[str] = (), rule_times: Sequence[str] = ()) -> str:
    """The user turn of one question (after :func:`intent_shots`): recording type, reference clips,
    the time phrases the rule parse found (as T1, T2) and the question."""
    times = "; ".join(f"T{i}={t}" for i, t in enumerate(rule_times[:4], 1)) or "none"
    last = [b.strip() for b in _template().split("\n\n") if b.strip()][-1]
    return last.format(domain=domain, roles=", ".join(sorted(roles)) or "none", times=times,
                       question=" ".join(str(text).split()))


def parse_line(reply: str, rule_times: Sequence[str] = (), reason: str = "filled by the LLM") -> Intent:
    """The :class:`Intent` of one reply line (ValueError: not one)."""
    line = (reply or "").strip().splitlines()[0] if (reply or "").strip() else ""
    if not re.fullmatch(LINE, line):
        raise ValueError(f"not an intent line: {line[:120]!r}")
    task, pol, dim = line.split(" ")[:3]
    f = dict(re.findall(r" ([tosak])=(.*?)(?= [tosak]=|$)", line))

    def items(v: Optional[str]) -> list[str]:
        return v.split(",") if v else []
    times = []
    for t in items(f.get("t")):
        m = re.fullmatch(r"T(\d)", t)
        if m:
            if int(m.group(1)) <= len(rule_times):
                times.append(rule_times[int(m.group(1)) - 1])
        else:
            times.append(t)
    return Intent(task, -1 if pol == "-" else 1, None if dim == "none" else dim, tuple(dict.fromkeys(times)),
                  reason, f.get("a") == "y", tuple(int(x) for x in items(f.get("o"))),
                  tuple(int(x) for x in items(f.get("s"))), tuple(x.strip() for x in items(f.get("k"))))


def _readable(phrase: str) -> bool:
    if phrase.endswith(" song"):
        return True
    try:
        localize(phrase, 1e6, point_window=0.5)      # any duration: is the phrase readable at all
        return True
    except (LocalizeError, ValueError):
        return False


def reconcile(llm: Intent, rule: Intent, text: str) -> tuple[Intent, list[str]]:
    """``llm`` checked against the rule parse ``rule``; returns (intent, notes naming every change).

    * a time phrase that does not localize is dropped;
    * where the time spans disagree and ``text`` holds an explicit range or clock time ("1:30",
      "from 40 to 95 seconds", "30:11 to 31:03"), the rule parse's spans win;
    * where the rule parse reads a supported task, its task, polarity, dimension and absence win
      (measured on the mini benchmark, the 0.5B's task choice is wrong where the rule's is right:
      docs/agent.md "Intent"); the LLM's intent counts in full where the rule parse finds no task
      (a question the rule classifier rejects), and its keywords, ordinals and speakers fill what
      the rule parse left empty.

    >>> a = Intent("change", times=("the last minute",))
    >>> b = Intent("change", times=("from 1811 to 1863 seconds",))
    >>> reconcile(a, b, "in the last minute or so, 30:11 to 31:03")[0].times
    ('from 1811 to 1863 seconds',)
    >>> reconcile(a, b, "in the last minute or so")[0].times
    ('the last minute',)
    >>> it, notes = reconcile(Intent("state", keywords=("trains",)), Intent("change", -1, "arousal"), "calmer?")
    >>> it.task, it.polarity, it.dimension, it.keywords, notes
    ('change', -1, 'arousal', ('trains',), ["task 'state' -> 'change': the rule parse reads a supported task"])
    """
    notes: list[str] = []
    times = tuple(t for t in llm.times if _readable(t))
    if times != llm.times:
        notes.append(f"dropped unreadable time phrase(s) {sorted(set(llm.times) - set(times))}")
    if times != tuple(rule.times) and rule.times and _EXPLICIT.search(text or ""):
        notes.append(f"times {list(times)} -> {list(rule.times)}: the text's explicit range / clock time wins")
        times = tuple(rule.times)
    it = replace(llm, times=times)
    if rule.supported:
        if it.task != rule.task:
            notes.append(f"task {it.task!r} -> {rule.task!r}: the rule parse reads a supported task")
        it = replace(it, task=rule.task, polarity=rule.polarity, dimension=rule.dimension, absence=rule.absence,
                     reason=rule.reason, keywords=rule.keywords or it.keywords,
                     ordinals=rule.ordinals or it.ordinals, speakers=rule.speakers or it.speakers)
    return it, notes


def llm_intent(client, text: str, domain: str, roles: Sequence[str] = ()) -> tuple[Intent, dict]:
    """The LLM's :class:`Intent` of a question (reconciled with the rule parse) and a meta dict
    (``intent_model``, ``intent_cached``, ``intent_raw``, ``intent_notes``).

    The grammar goes to clients that take one (llm backend ``local``); a reply that is no intent
    line falls back to the rule parse, saying so in ``intent_notes``."""
    rule = read_question(text, domain, tuple(roles))
    prompt = intent_prompt(text, domain, roles, rule.times)
    if getattr(client, "backend", "") == "local":
        kw = {"grammar": intent_grammar(domain_tasks(domain, roles), len(rule.times)), "valid": LINE,
              "shots": intent_shots()}
    else:                          # a server without grammars or turns: the examples in one turn
        kw = {}
        prompt = "\n\n".join(f"{u}\n{a}" for u, a in intent_shots()) + "\n\n" + prompt
    r = client.complete([prompt], max_tokens=INTENT_MAX_TOKENS, **kw)
    meta = {"intent_model": r.model_id, "intent_cached": r.cached, "intent_raw": r.text}
    try:
        it = parse_line(r.text, rule.times)
    except ValueError:
        forget = getattr(client, "forget", None)
        if callable(forget):
            forget(r)
        return rule, {**meta, "intent_notes": ["the reply was no intent line; used the rule parse"]}
    it, notes = reconcile(it, rule, text)
    return it, {**meta, "intent_notes": notes}
