"""Questions about your own recording (``harp ask``, the explorer): one question path.

A question is read by :func:`harp_lib.tasks.recording.understand` into the one typed
:class:`~harp_lib.understand.intent.Intent`:

* a **question kind about the recording** (a :class:`~harp_lib.tasks.recording.QuestionKind` in the
  task registry: transcript at a time, when something is said, speaker at a time, first / last turn
  of speaker N, speaker count, speaking time, what speaker N says about X, how often X is said, the last
  thing said, whether anyone sounds upset, sound events, song count, song N's span, the song at a time,
  the top song by an aesthetics score) is answered by that kind's
  ``reply`` from what extraction found (the diarizer's turns, the segments, the songs) -- or
  ``cannot answer this: <why>`` when this recording's pipeline lacks it;
* a **benchmark task** (state, change, comparison, locate, reported, exhibited, time, position,
  audio) goes to the HARP agent (planner, tools, answerer of the chosen setup), as ``infer`` does;
* anything else is an "unsupported question" whose rationale says what can be asked.  With
  ``--agent llm`` such a question goes to the LLM, which fills the same Intent under a grammar
  (:mod:`harp_lib.agent.llm_intent`): a question kind or task the extracted data answers is
  answered, anything else gets ``cannot answer this: <why>``.

No query type or ground truth is needed.  Answers are cached under ``answers/`` keyed on content --
the question text, the recording's audio hash, the reference clips' content hashes, the setup, the
agent, the configuration and the extraction state (hashes of the recording's segments, vectors,
embedding backends and the index) -- so an edited question or a re-extracted recording is answered
afresh and an identical one is served from the cache.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence
from urllib.parse import urlparse

import yaml

from harp_lib.agent.evidence import render_labels
from harp_lib.agent.llm_intent import llm_intent
from harp_lib.agent.runner import Agent
from harp_lib.core.atomic import part_path
from harp_lib.config import Config, get_setup
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.core.timespan import format_time
from harp_lib.llm import make_client
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.tasks import question_kinds
from harp_lib.tasks.registry import in_answer_space
from harp_lib.tasks.recording import CANNOT, Facts, answer_kind, understand
from harp_lib.understand.intent import UNSUPPORTED
from harp_lib.core.hashing import file_sha256
from harp_lib.ownaudio.collection import UserCollection, UserDataError, _cfg, printable, _extraction_state, find_recording
from harp_lib.ownaudio.refs import _stage_ref

__all__ = ["EvidenceRow", "Answer", "ask", "llm_or_offline", "LLMChoice", "ask_add_arguments", "ask_run",
           "ANSWER_CACHE_VERSION"]

#: Bump when the shape of a cached answer or the way a question is read changes (old cache files are
#: then ignored).  3: one question path (issue 32): "Where does someone mention X?" and other questions
#: once answered "unsupported question" are answered now.  4: songs are counted as songs, not as their
#: 15 s index chunks (issue 40), new kinds song_at / song_rank.  5: "the last speaker stops talking" is
#: a stop-talking question; speaker_said, say_count, last_said, sounds_emotion, sound_event (issue 40).
ANSWER_CACHE_VERSION = 5

# ----------------------------------------------------------------------------- answers
@dataclass(frozen=True)
class EvidenceRow:
    """One piece of evidence shown with an answer."""
    start: float
    end: float
    speaker: Optional[str] = None
    text: str = ""
    labels: dict = field(default_factory=dict)
    segment_id: str = ""
    set: int = 1

    def line(self) -> str:
        who = f" {self.speaker}:" if self.speaker else ""
        txt = f' "{self.text}"' if self.text else ""
        lab = render_labels(self.labels) if self.labels else ""
        return f"[{format_time(self.start)}–{format_time(self.end)}]{who}{txt}" + (f"  ({lab})" if lab else "")


@dataclass(frozen=True)
class Answer:
    """The answer to one question about one recording, with how it was found."""
    recording_id: str
    collection: str
    domain: str
    question: str
    setup: str
    agent: str
    intent: str
    plan: tuple[str, ...]
    evidence: tuple[EvidenceRow, ...]
    answer: str
    rationale: str
    value: Any = None                 # machine-readable: seconds for times, a count, a speaker label
    key: str = ""                     # the content key of the answer cache
    cached: bool = False
    error: Optional[str] = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping) -> "Answer":
        d = dict(d)
        d["plan"] = tuple(d.get("plan") or ())
        d["evidence"] = tuple(EvidenceRow(**e) for e in d.get("evidence") or ())
        return cls(**d)

    def render(self) -> str:
        lines = [f"Question: {self.question}",
                 f"Recording: {self.recording_id} (collection {self.collection}, {self.domain} pipeline), "
                 f"setup {self.setup}, agent {self.agent}" + (" [cached]" if self.cached else ""),
                 "Plan:"] + [f"  {i}. {p}" for i, p in enumerate(self.plan, 1)] + ["Evidence:"]
        lines += [f"  {'set ' + str(e.set) + ' ' if len({x.set for x in self.evidence}) > 1 else ''}{e.line()}"
                  for e in self.evidence] or ["  (none)"]
        lines += [f"Answer: {self.answer}", f"Rationale: {self.rationale}"]
        if self.error:
            lines.append(f"Error: {self.error}")
        return "\n".join(lines)

def _row(s: Segment | Any, set_no: int = 1) -> EvidenceRow:
    return EvidenceRow(float(s.start), float(s.end), getattr(s, "speaker", None), getattr(s, "text", "") or "",
                       dict(getattr(s, "labels", {}) or {}), getattr(s, "id", None) or getattr(s, "segment_id", ""),
                       set_no)


def _turns(col: UserCollection, domain: str, rec_id: str, segs: Sequence[Segment]) -> list[Segment]:
    """The diarizer's own turns (stage-1 ``turns.json`` ``raw``: before short turns are merged into
    segments), each with the words ASR placed in it and the labels of the segment holding it.
    Falls back to the segments when the cache is gone."""
    p = col.extract_dir(domain) / "stage1" / rec_id / "turns.json"
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))["raw"]
    except (OSError, ValueError, KeyError):
        return list(segs)
    words = [(str(w[0]), float(w[1]), float(w[2])) for s in segs for w in (s.custom or {}).get("words", [])]
    out = []
    for i, t in enumerate(sorted(raw, key=lambda t: t["start"])):
        a, b = float(t["start"]), float(t["end"])
        if b - a < 0.25:                     # shorter than any speech the VAD keeps: a diarizer blip
            continue
        mid = (a + b) / 2
        host = next((s for s in segs if s.start <= mid <= s.end), None)
        text = " ".join(w for w, ws, we in words if a <= (ws + we) / 2 < b)
        out.append(Segment(f"{rec_id}_turn_{i:04d}", rec_id, a, b, t.get("speaker"), text,
                           dict(host.labels) if host else {}, source="extracted"))
    return out or list(segs)


def _config_fingerprint(cfg: Config, agent: str, llm: Optional["LLMChoice"] = None) -> dict:
    raw = cfg.data
    keep = {"agent": raw.get("agent", {}), "extract": {k: raw["extract"].get(k) for k in
                                                        ("backends", "options", "sample_rate", "max_seg_sec",
                                                         "min_turn_sec", "fill_gaps_sec", "segmenter")},
            "tie_delta": (raw.get("benchmark") or {}).get("tie_delta")}
    if agent == "llm":
        keep["llm"] = llm.options if llm is not None else raw.get("llm", {})   # the LLM that answers
    return json.loads(json.dumps(keep, sort_keys=True, default=str))


def ask(recording_id: str, question: str, *, refs: Optional[Mapping[str, str]] = None, setup: str = "A5",
        agent: str = "rule", collection_name: Optional[str] = None, cfg: Optional[Config] = None,
        use_cache: bool = True) -> Answer:
    """Answer a free-text question about an ingested recording (see the module doc).

    ``refs`` maps a role (A, B, E) to an audio clip ("like this clip").  The answer is cached
    under ``<collection>/answers/<key>.json``; ``use_cache=False`` recomputes (and rewrites) it.
    """
    cfg = _cfg(cfg)
    question = printable(question)
    if not question:
        raise UserDataError("the question is empty")
    if agent not in ("rule", "llm"):
        raise UserDataError(f"--agent {agent!r}: use rule or llm")
    try:
        s = get_setup(setup)
    except KeyError as e:
        raise UserDataError(str(e).strip("'\"")) from None
    if s.oracle:
        raise UserDataError(f"setup {s.name} plans from ground truth, which your recordings do not have; "
                            f"use A1-A5 (default A5)")
    col, rec = find_recording(cfg, recording_id, collection_name)
    dom = rec.domain
    wav = col.bench_dir(dom) / rec.audio_path
    staged = {r: _stage_ref(col, dom, r, p) for r, p in sorted((refs or {}).items())}
    llm = LLMChoice(cfg) if agent == "llm" else None
    key_src = {"v": ANSWER_CACHE_VERSION, "question": question, "recording": rec.id,
               "audio_sha256": file_sha256(wav), "refs": {r: sha for r, (_, sha) in staged.items()},
               "setup": s.name, "agent": agent, "config": _config_fingerprint(cfg, agent, llm),
               "extraction": _extraction_state(col, rec)}
    key = hashlib.sha256(json.dumps(key_src, sort_keys=True).encode()).hexdigest()
    cache = col.answers_dir / f"{key}.json"
    if use_cache and cache.exists():
        try:
            return Answer.from_dict({**json.loads(cache.read_text(encoding="utf-8"))["answer"], "cached": True})
        except (ValueError, KeyError, TypeError):
            pass                                   # an unreadable cache entry is recomputed
    ans = _answer(cfg, col, rec, question, {r: rel for r, (rel, _) in staged.items()}, s, agent, key, llm)
    if ans.error is None:
        _store_answer(cache, {"key": key_src, "answer": ans.to_dict()})
    return ans


def _store_answer(cache, entry: dict) -> None:
    """Write one answer-cache entry atomically.  The cache only saves time: a folder that cannot
    take it (read-only, full, ``answers`` being a file) costs one warning naming the path, never
    the answer (issue #28)."""
    tmp = part_path(cache)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(entry, indent=1, sort_keys=True, default=str), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        where = e.filename or cache.parent
        why = ("is a file, not a folder" if cache.parent.exists() and not cache.parent.is_dir()
               else e.strerror or e)
        logging.getLogger(__name__).warning("answer not cached: %s: %s", where, why)


def _answer(cfg: Config, col: UserCollection, rec: Recording, question: str, refs: dict, s, agent: str,
            key: str, llm: Optional["LLMChoice"] = None) -> Answer:
    dom = rec.domain
    idx_dir = col.index_dir(dom)
    if not idx_dir.exists():
        raise UserDataError(f"{idx_dir} is missing: run `harp ingest` again for {rec.custom.get('source', rec.id)}")
    index = SegmentIndex.load(idx_dir)
    segs = index.segments(rec.id)
    base = dict(recording_id=rec.id, collection=col.name, domain=dom, question=question, setup=s.name,
                agent=agent, key=key)
    it = understand(question, dom, tuple(refs))
    if not it.supported and agent == "llm":        # the rule classifier rejects it: the LLM reads it
        it, why = _llm_understand(llm or LLMChoice(cfg), question, dom, tuple(refs))
        if why:
            return Answer(**base, intent=f"llm:{it.task}", plan=(), evidence=(), answer=CANNOT,
                          rationale=f"{CANNOT}: {why}.")
    if it.task in {k.name for k in question_kinds()}:
        if not s.show_metadata:
            return Answer(**base, intent=it.task, plan=(), evidence=(), answer="unsupported question",
                          rationale=f"setup {s.name} hides speakers and transcripts from the answerer; ask with "
                                    f"--setup A5 (or A1-A3)")
        facts = Facts(tuple(segs), tuple(_turns(col, dom, rec.id, segs)), rec.duration, dom,
                      str(col.bench_dir(dom) / rec.audio_path))
        r = answer_kind(it, facts)
        return Answer(**base, intent=it.task, plan=r.plan, evidence=tuple(_row(x) for x in r.rows), answer=r.answer,
                      rationale=r.rationale, value=r.value)
    if not it.supported:
        return Answer(**base, intent=UNSUPPORTED, plan=(), evidence=(), answer="unsupported question",
                      rationale=_unsupported_help(dom, agent))
    return _agent_answer(cfg, col, rec, index, question, refs, s, agent, it.task, base, llm)


#: What a question kind reads from the intent (a kind the LLM chose without it cannot be answered).
_KIND_NEEDS = {"speaker_at": ("times", "a time"), "said_at": ("times", "a time"),
               "when_said": ("keywords", "words to look for"), "speaker_first": ("speakers", "which speaker"),
               "speaker_last": ("speakers", "which speaker"), "song_span": ("ordinals", "which song"),
               "song_at": ("times", "a time"), "speaker_said": ("keywords", "words to look for"),
               "say_count": ("keywords", "words to count"), "sounds_emotion": ("keywords", "an emotion"),
               "sound_event": ("keywords", "a sound")}


def _llm_understand(llm: "LLMChoice", question: str, domain: str, roles: tuple) -> tuple[Any, Optional[str]]:
    """The LLM's intent of a question the rule classifier rejects (``--agent llm``) and why it
    cannot be answered (None: it maps to a task or question kind this recording's data answers)."""
    try:
        client = llm.client()
        it, meta = llm_intent(client, question, domain, roles)
    except Exception as e:  # noqa: BLE001 - no LLM: one clear message
        raise UserDataError(f"--agent llm: the LLM could not read the question ({type(e).__name__}: {e}); "
                            f"use --agent rule, or set up the llm: section of params.yaml (docs/your_own_audio.md)") from None
    model = getattr(client, "model_id", "the LLM")
    if it.task == UNSUPPORTED:
        return it, (f"the rule classifier found no question type, and the LLM ({model}) read none of the question "
                    f"kinds and tasks the extracted {domain} data answers either")
    need = _KIND_NEEDS.get(it.task)
    if need and not getattr(it, need[0]):
        return it, f"the LLM ({model}) read a {it.task} question but found no {need[1]} in it"
    cue = _KIND_CUES.get(it.task)
    if cue and not re.search(cue[0], question.lower()):
        return it, f"the LLM ({model}) read a {it.task} question, but the question asks for no {cue[1]}"
    return it, None


#: Words without which a question is not the kind the LLM chose (a kind that takes no field from
#: the question: the small model maps "What key is the third song in?" to n_songs, answered "4").
_COUNT = (r"\b(how many|how often|number|count\w*|tally|times)\b", "count")
_KIND_CUES = {"n_speakers": _COUNT, "n_songs": _COUNT, "say_count": _COUNT,
              "last_said": (r"\b(last|first|final|finally|end\w*|start\w*|begin\w*|clos\w*|open\w*)\b",
                            "first or last thing said"),
              "talk_time": (r"\b(more|most|less|least|longest|longer|how long|how much|time)\b", "speaking time"),
              "song_rank": (r"\b(most|least|best|worst|more|less|\w{3,}est|favou?rite|rank\w*|top)\b", "ranking")}


def _unsupported_help(domain: str, agent: str = "rule") -> str:
    dom = {"emotion": "emotions (\"How does the host feel around 2 minutes?\", \"Does valence rise over the "
                      "first minute?\", --ref E=clip.wav \"When does someone sound like this?\")",
           "clinical": "symptoms (\"Does the patient mention breathing problems?\", \"Does the patient "
                       "cough?\")",
           "song": "songs (\"Which is better, the first or the second song?\", --ref A=a.wav --ref B=b.wav)"}[domain]
    kinds = [k.example for k in question_kinds() if domain in k.domains and k.example]
    llm = ""
    return (f"{CANNOT}: no answer rule fits this question.  Ask about "
            + ("songs (" if domain == "song" else "speakers and times (") + ", ".join(f'"{e}"' for e in kinds)
            + ") or about " + dom + "." + llm)


def _shipped_llm_url() -> Optional[str]:
    """``llm.base_url`` of the params.yaml that ships with the package (None: not found)."""
    try:
        raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text(encoding="utf-8"))
        return str(raw["llm"]["base_url"])
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return None


def llm_or_offline(cfg: Config) -> tuple[dict, Optional[str]]:
    """The LLM that ``--agent llm`` talks to: ``(client options for harp_lib.llm.make_client, note)``.

    ``llm:`` as configured (note None) unless it is an OpenAI-compatible server on this machine
    (localhost / 127.0.0.1 / ::1) that refuses one TCP connect (1 s at most, so a machine without a
    server says so at once instead of after the client's retries and back-off; a remote server is
    left to the client's own retries).  Then, when ``llm.base_url`` is still the shipped default
    (the package's params.yaml), the offline model of ``llm_offline`` (llama.cpp, no server)
    answers and ``note`` is the one line that says so; a URL set to anything else is a
    :class:`UserDataError` naming it.

    >>> from harp_lib.config import load_config
    >>> llm_or_offline(load_config(overrides={"llm": {"backend": "local", "model": "qwen2.5-coder-0.5b"}}))[1] is None
    True
    """
    llm = dict(cfg.get("llm"))
    url = urlparse(str(llm.get("base_url") or ""))
    if llm.get("backend") != "openai" or url.hostname not in ("localhost", "127.0.0.1", "::1"):
        return llm, None
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout=1.0).close()
        return llm, None
    except OSError as e:
        why = e.strerror or e
    if str(llm.get("base_url")) != _shipped_llm_url():
        raise UserDataError(f"--agent llm: no LLM server at {llm.get('base_url')} ({why}), the llm.base_url you set; "
                            f"start it (scripts/serve_vllm.sh), set llm.base_url back to use the offline model, or "
                            f"--agent rule") from None
    off = dict(cfg.get("llm_offline"))
    for k in ("weights_dir", "cache_dir"):       # relative: under the repository root, as llm_offline documents
        if off.get(k) and not Path(off[k]).is_absolute():
            off[k] = str(Path(cfg.root) / off[k])
    return off, (f"no LLM server at {llm.get('base_url')}: the offline model {off.get('model')} answers "
                 f"(set llm.base_url to use a server)")


class LLMChoice:
    """The ``--agent llm`` client of one question (:func:`llm_or_offline`), built on first use;
    building the offline model's client prints its note, one line on stderr."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.options, self.note = llm_or_offline(cfg)
        self._client = None

    def client(self):
        if self._client is None:
            self._client = make_client(self.options, root=self.cfg.root)
            if self.note:
                print(f"harp ask: {self.note}", file=sys.stderr)
        return self._client


def _agent_answer(cfg, col, rec, index, question, refs, s, agent, task, base, llm=None) -> Answer:
    q = Query(f"ask_{base['key'][:12]}", rec.domain, rec.id, task, question, {}, references=dict(refs))
    try:
        client = (llm or LLMChoice(cfg)).client() if agent == "llm" else None
        a = Agent(index, s, cfg, domain=rec.domain, planner=agent, answerer=agent, client=client)
    except Exception as e:  # noqa: BLE001 - an LLM client that cannot be built: one clear message
        if agent == "llm":
            raise UserDataError(f"--agent llm: the local LLM is not available ({type(e).__name__}: {e}); "
                                f"use --agent rule, or set up the llm: section of params.yaml "
                                f"(docs/your_own_audio.md)") from None
        raise
    pred = a(q, rec, col.bench_dir(rec.domain))
    if pred.error and agent == "llm" and "LLM" in pred.error:
        raise UserDataError(f"--agent llm: the local LLM is not available ({pred.error}); use --agent rule")
    if agent == "llm" and not pred.error and not in_answer_space(task, pred.answer):
        pred = pred.replace(error=f"the LLM's reply {pred.answer[:120]!r} is not an answer to a {task} question "
                                  f"(a refusal or prose): no answer, not stored in the answer cache; use --agent rule, or clear "
                                  f"llm.cache_dir once the server answers")
    plan = []
    for ps in pred.plan.sets:
        tools = ", ".join(f"{t}={getattr(ps, t)!r}" if getattr(ps, t) is not True else t for t in ps.tools_used())
        plan.append(f"{ps.localize} · {tools or 'no tool'}")
    plan += [f"(plan repaired: {e})" for e in pred.plan.errors]
    rows = tuple(EvidenceRow(it.start, it.end, it.speaker if s.show_metadata else None,
                             it.text if s.show_metadata else "", dict(it.labels) if s.show_metadata else {},
                             it.segment_id, es.index) for es in pred.evidence.sets for it in es.items)
    return Answer(**base, intent=f"agent:{task}", plan=tuple(plan), evidence=rows, answer=pred.answer,
                  rationale=pred.rationale, value=pred.answer or None, error=pred.error)


def ask_add_arguments(ap) -> None:
    """``harp ask RECORDING "question" [--ref A=clip.wav ...] [--setup A5] [--agent rule|llm] [--json]``."""
    ap.add_argument("recording", help="recording id printed by `harp ingest`")
    ap.add_argument("question", help="the question, in quotes")
    ap.add_argument("--ref", action="append", default=[], metavar="ROLE=CLIP",
                    help="reference clip (0.3-60 s) for role A, B or E (one per role, repeatable), e.g. --ref E=laugh.wav")
    ap.add_argument("--setup", default="A5", help="A1..A5 (default A5: hybrid retrieval, audio + metadata)")
    ap.add_argument("--agent", default="rule", choices=("rule", "llm"), help="planner and answerer")
    ap.add_argument("--collection", default=None, help="user collection (default: search all)")
    ap.add_argument("--no-cache", action="store_true", help="recompute even if this exact question was answered")
    ap.add_argument("--json", action="store_true", help="print the answer record as JSON")


def ask_run(cfg: Config, a) -> int:
    logging.getLogger("harp_lib.agent.runner").setLevel(logging.ERROR)   # its errors come back in the answer
    refs = {}
    for r in a.ref:
        role, sep, path = r.partition("=")
        if not sep or not path:
            print(f"harp ask: --ref {r!r}: write ROLE=CLIP, e.g. --ref A=clip.wav", file=sys.stderr)
            return 2
        role = role.strip().upper()
        if role in refs:
            print(f"harp ask: --ref {role} is given twice ({refs[role]}, {path}); give one clip per role",
                  file=sys.stderr)
            return 2
        refs[role] = path
    try:
        ans = ask(a.recording, a.question, refs=refs, setup=a.setup, agent=a.agent, collection_name=a.collection,
                  cfg=cfg, use_cache=not a.no_cache)
    except UserDataError as e:
        print(f"harp ask: {e}", file=sys.stderr)
        return 2
    print(json.dumps(ans.to_dict(), sort_keys=True, default=str) if a.json else ans.render())
    return 1 if ans.error else 0
