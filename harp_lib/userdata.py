"""Your own recordings and your own questions: ``harp ingest`` and ``harp ask``.

``ingest`` takes any audio file ffmpeg or libsndfile reads (mp3, flac, m4a, 44.1 kHz stereo,
spaces in the name, absolute paths), gives it a safe id from its file name, converts it once
to 16 kHz mono WAV inside a *user collection* under ``paths.data`` (never under ``results/``
and apart from the benchmark), probes its duration, writes ``recordings.jsonl`` and runs the
same extraction (stage 1 + 2) and indexing as the benchmark.  Layout::

    <paths.data>/user/<collection>/
        <domain>/recordings.jsonl   <domain>/audio/<id>.wav   <domain>/refs/<sha>.wav
        extract/<domain>/...        index/<domain>/...        answers/<key>.json

Domains: ``speech`` is the emotion (podcast) pipeline -- VAD, speaker diarization, ASR, speech
embeddings and the prosody emotion labeler -- so any conversation fits it; ``clinical`` adds the
cough detector (and joins short pauses into turns); ``song`` segments music into songs and scores
their aesthetics.  ``emotion``/``podcast`` and ``music`` are accepted as aliases.

``ask`` answers a free-text question about one ingested recording.  Questions about the
recording's structure (when a speaker first talks, who speaks at a time, what is said at a time,
when something is said, how many speakers, how long each talks, the transcript) are answered
from the extracted segments; other questions go to the HARP agent (planner, tools, answerer of
the chosen setup).  No query type or ground truth is needed.  Answers are cached under
``answers/`` keyed on content -- the question text, the recording's audio hash, the reference
clips' content hashes, the setup, the agent, the configuration and the extraction state (hashes of
the recording's segments, vectors, embedding backends and the index) -- so an edited question
or a re-extracted recording is answered afresh and an identical one is served from the cache.

>>> safe_id("My Call (final) #2.MP3")
'My_Call_final_2'
>>> unique_id("call", {"call", "call_2"})
'call_3'
>>> resolve_domain("speech")
'emotion'
>>> question_intent("When does the second speaker first talk?").name
'speaker_first'
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from .atomic import part_path
from .config import Config, positive_int
from .schema import DOMAINS, REFERENCE_ROLES, Recording, SchemaError, Segment, read_jsonl, write_jsonl
from .timespan import LocalizeError, format_time

__all__ = ["DOMAIN_ALIASES", "UserDataError", "UserCollection", "IngestedRecording", "EvidenceRow", "Answer",
           "Intent", "safe_id", "unique_id", "resolve_domain", "collection", "collections", "find_recording",
           "ingest", "ask", "question_intent", "benchmark_task", "sample_recording", "ingest_add_arguments", "ingest_run", "ask_add_arguments", "ask_run",
           "ANSWER_CACHE_VERSION"]

#: ``--domain`` words -> the package's pipeline domain (``harp_lib.schema.DOMAINS``).
DOMAIN_ALIASES: dict[str, str] = {"speech": "emotion", "emotion": "emotion", "podcast": "emotion",
                                  "clinical": "clinical", "song": "song", "music": "song"}
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
SR = 16000
#: Reference clips (``--ref ROLE=CLIP``) are short examples of a sound: at most this long (checked on
#: the file's header, before anything is read or copied) ...
MAX_REF_SEC = 60.0
#: ... and at least this long (seconds).
MIN_REF_SEC = 0.3
#: Bump when the shape of a cached answer changes (old cache files are then ignored).
ANSWER_CACHE_VERSION = 2


class UserDataError(ValueError):
    """A user input or user collection problem; the message says what and what to do."""


# ----------------------------------------------------------------------------- ids and paths
def safe_id(name: str) -> str:
    """A recording id from a file name: its stem with every run of characters outside
    ``[A-Za-z0-9_-]`` replaced by ``_`` (no separators, dots or spaces); ``rec`` if nothing is left."""
    stem = Path(str(name)).name
    stem = stem.rsplit(".", 1)[0] if "." in stem.lstrip(".") else stem
    out = _SAFE.sub("_", stem).strip("_-")
    return out[:80] or "rec"


def unique_id(base: str, taken: Iterable[str]) -> str:
    """``base``, or ``base_2``, ``base_3`` ... whichever is not in ``taken``."""
    taken = set(taken)
    if base not in taken:
        return base
    n = 2
    while f"{base}_{n}" in taken:
        n += 1
    return f"{base}_{n}"


def resolve_domain(name: str) -> str:
    """The pipeline domain for a ``--domain`` word (see :data:`DOMAIN_ALIASES`)."""
    d = DOMAIN_ALIASES.get(str(name).strip().lower())
    if d is None:
        raise UserDataError(f"unknown domain {name!r}: use speech (conversations, podcasts), clinical "
                            f"(consultations: coughs) or song (music)")
    return d


@dataclass(frozen=True)
class UserCollection:
    """The folders of one user collection (``<paths.data>/user/<name>``)."""
    name: str
    root: Path

    def manifest(self, domain: str) -> Path:
        return self.root / domain / "recordings.jsonl"

    def bench_dir(self, domain: str) -> Path:
        return self.root / domain

    def extract_dir(self, domain: str) -> Path:
        return self.root / "extract" / domain

    def index_dir(self, domain: str) -> Path:
        return self.root / "index" / domain

    @property
    def answers_dir(self) -> Path:
        return self.root / "answers"

    def recordings(self, domain: str) -> list[Recording]:
        m = self.manifest(domain)
        return read_jsonl(m, Recording) if m.exists() else []

    def all_ids(self) -> dict[str, str]:
        """Every recording id of the collection -> its domain."""
        return {r.id: d for d in DOMAINS for r in self.recordings(d)}


def _cfg(cfg: Optional[Config]) -> Config:
    if cfg is not None:
        return cfg
    from .config import load_config
    return load_config()


def collection(cfg: Optional[Config] = None, name: str = "default") -> UserCollection:
    """The user collection ``name`` (a safe name) under ``<paths.data>/user/``.

    Refuses a data root inside ``paths.results`` (user runs never write into ``results/``).
    """
    cfg = _cfg(cfg)
    if not name or _SAFE.search(name) or name.strip("_-") != name:
        raise UserDataError(f"collection name {name!r}: use letters, digits, '_' and '-' only")
    from .paths import DataPaths, IdError
    try:
        return UserCollection(name, DataPaths(cfg).user_collection(name))
    except IdError as e:
        raise UserDataError(str(e)) from None


def collections(cfg: Optional[Config] = None) -> list[UserCollection]:
    """Every user collection under ``<paths.data>/user/`` (sorted by name)."""
    cfg = _cfg(cfg)
    base = cfg.path("paths.data") / "user"
    if not base.is_dir():
        return []
    return [collection(cfg, p.name) for p in sorted(base.iterdir()) if p.is_dir() and not _SAFE.search(p.name)]


def find_recording(cfg: Optional[Config], recording_id: str,
                   collection_name: Optional[str] = None) -> tuple[UserCollection, Recording]:
    """The user recording ``recording_id`` (searched in ``collection_name`` or every collection)."""
    cfg = _cfg(cfg)
    if collection_name:                  # the one named: its errors are the user's to see
        listed = [(c, r) for c in [collection(cfg, collection_name)] for d in DOMAINS for r in c.recordings(d)]
    else:
        listed = _readable_recordings(cfg)
    found = [(c, r) for c, r in listed if r.id == recording_id]
    if not found:
        have = sorted(f"{c.name}/{r.id}" for c, r in listed)
        raise UserDataError(f"no ingested recording {recording_id!r}"
                            + (f" in collection {collection_name!r}" if collection_name else "")
                            + f" (have: {', '.join(have[:20]) or 'none'}); run `harp ingest FILE --domain "
                              f"speech|clinical|song` first")
    if len(found) > 1:
        raise UserDataError(f"recording id {recording_id!r} is in several collections "
                            f"({', '.join(c.name for c, _ in found)}); pick one with --collection")
    return found[0]


def _readable_recordings(cfg: Config) -> list[tuple[UserCollection, Recording]]:
    """Every listed recording of every collection.  A collection folder with an unusable name or
    a manifest that cannot be read is skipped with a one-line warning naming it, so one bad
    entry never makes every question fail (issue #28)."""
    import logging
    log = logging.getLogger(__name__)
    base = cfg.path("paths.data") / "user"
    out: list[tuple[UserCollection, Recording]] = []
    for p in sorted(base.iterdir()) if base.is_dir() else []:
        if not p.is_dir() or p.name.startswith("."):       # hidden: lock or scratch folders
            continue
        try:
            c = collection(cfg, p.name)
            out += [(c, r) for d in DOMAINS for r in c.recordings(d)]
        except (UserDataError, SchemaError, OSError) as e:
            log.warning("skipping collection %s: %s", printable(repr(p.name)), printable(" ".join(str(e).split())))
    return out


# ----------------------------------------------------------------------------- audio
def _sha256(path: Path) -> str:
    from .extract.pipeline import file_sha256
    return file_sha256(path)


def _why(err: Exception, path: Path) -> str:
    """An error's text on one line, without the file name the message already starts with."""
    msg = " ".join(str(err).replace(str(path) + ":", " ").split())
    return msg[:300]


def _convert(src: Path, dst: Path) -> None:
    """``src`` -> 16 kHz mono 16-bit WAV at ``dst`` (ffmpeg; libsndfile + resampling without it)."""
    from . import audio
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(f"{part_path(dst)}.wav")        # unique per writer (ffmpeg picks the format from .wav)
    exe = shutil.which("ffmpeg")
    if exe:
        r = subprocess.run([exe, "-nostdin", "-v", "error", "-y", "-i", str(src), "-vn", "-ac", "1", "-ar", str(SR),
                            "-c:a", "pcm_s16le", str(tmp)], capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise UserDataError(f"{src}: ffmpeg could not convert it ({r.stderr.strip()[-300:]})")
    else:
        audio.write(tmp, audio.load(src, sr=SR), SR)
    os.replace(tmp, dst)


def _write_manifest(path: Path, recs: Sequence[Recording]) -> None:
    write_jsonl(path, sorted(recs, key=lambda r: r.id))        # atomic (harp_lib.atomic)


# ----------------------------------------------------------------------------- ingest
@dataclass(frozen=True)
class IngestedRecording:
    """One ingested file: its id, where its 16 kHz copy and outputs are, what extraction found."""
    id: str
    domain: str
    collection: str
    source: str
    audio_path: str
    duration: float
    sha256: str
    converted: bool
    segments: int = 0
    speakers: int = 0
    error: Optional[str] = None

    def to_dict(self) -> dict:
        return asdict(self)


def ingest(paths: Sequence[os.PathLike | str], domain: str = "speech", *, collection_name: str = "default",
           cfg: Optional[Config] = None, progress: bool = True, workers: Optional[int] = None) -> list[IngestedRecording]:
    """Ingest audio files into a user collection, extract and index them.

    Re-ingesting the same file path keeps its id; if its audio changed it is converted and
    extracted again (the extraction cache follows the audio's content hash and options).

    One ingest at a time per collection and domain (:func:`harp_lib.locks.stage_lock`, stage
    ``ingest``; a second one waits and says who holds it), so ids stay unique and no recording
    is lost from ``recordings.jsonl``.  A recording enters the manifest only once its extraction
    and the index are complete: a killed or failed ingest leaves the manifest as it was.

    Returns one :class:`IngestedRecording` per path, in order.  A file that cannot be read
    raises :class:`UserDataError` before anything is written; a recording the extractor
    quarantines is returned with ``error`` set and is not added to the manifest.
    """
    from .locks import stage_lock
    cfg = _cfg(cfg)
    dom = resolve_domain(domain)
    col = collection(cfg, collection_name)
    srcs = _ingest_sources(paths)
    with stage_lock(col.bench_dir(dom), "ingest"):
        return _ingest_locked(cfg, col, dom, str(domain), srcs, progress, workers)


def _ingest_sources(paths: Sequence[os.PathLike | str]) -> list[Path]:
    """The absolute, readable, distinct audio files of ``paths`` (else :class:`UserDataError`)."""
    from . import audio
    if not paths:
        raise UserDataError("no audio files given")
    srcs = []
    for p in paths:
        src = Path(os.path.expanduser(str(p))).resolve()
        if not src.is_file():
            raise UserDataError(f"{p}: no such audio file")
        try:
            _check_source(src)
        except audio.AudioError as e:
            raise UserDataError(f"{p}: not a readable audio file ({_why(e, src)}); convert it with ffmpeg "
                                f"or check that it is not damaged") from None
        srcs.append(src)
    if len(set(srcs)) != len(srcs):
        raise UserDataError("the same file is given twice: " + ", ".join(sorted({str(s) for s in srcs
                                                                                 if srcs.count(s) > 1})))
    return srcs


def _check_source(src: Path) -> None:
    """Refuse a source that would ingest as something else (issue #28): a WAV whose header
    promises more frames than the file holds (it would become a shorter recording without a
    word), and float samples that are NaN / infinite (ffmpeg would turn them into silence).
    Only float PCM can hold NaN, so only such files are decoded here (in 60 s windows)."""
    from . import audio
    audio.validate(src, decode=False)
    try:
        import soundfile as sf
        subtype = sf.info(str(src)).subtype
    except Exception:  # noqa: BLE001 - not a libsndfile format (mp3 via ffmpeg ...): no float PCM
        return
    if subtype in ("FLOAT", "DOUBLE"):
        audio.validate(src, decode=True)


def _stage_sources(col: UserCollection, dom: str, word: str, srcs: Sequence[Path], existing: Mapping[str, Recording],
                   progress: bool) -> list[tuple[Recording, Path, str, bool]]:
    """Give each source its id and a 16 kHz copy.  A converted copy is written beside the final
    ``audio/<id>.wav`` under a temporary name (the recording's ``audio_path`` points at it until
    :func:`_publish` renames it), so a killed ingest never changes a published recording's audio."""
    from . import audio
    from .progress import progress as bar
    by_source = {str(r.custom.get("source")): r for r in existing.values()}
    taken = set(col.all_ids())
    staged = []
    for src in bar(srcs, desc=f"convert to {SR // 1000} kHz mono", total=len(srcs)) if progress else srcs:
        sha = _sha256(src)
        old = by_source.get(str(src))
        rid = old.id if old is not None else unique_id(safe_id(src.name), taken)
        taken.add(rid)
        wav = col.bench_dir(dom) / "audio" / f"{rid}.wav"
        fresh = not (old is not None and old.custom.get("source_sha256") == sha and wav.exists())
        use = wav
        if fresh:
            use = Path(f"{part_path(wav)}.wav")
            _convert(src, use)
        info = audio.probe(use)
        rec = Recording(rid, dom, use.relative_to(col.bench_dir(dom)).as_posix(), info.duration, SR,
                        custom={"source": str(src), "source_sha256": sha, "collection": col.name, "domain_word": word})
        staged.append((rec, src, sha, fresh))
    return staged


def _publish(col: UserCollection, dom: str, rec: Recording) -> Recording:
    """Move a staged copy to ``audio/<id>.wav``; the recording as the manifest lists it."""
    final = f"audio/{rec.id}.wav"
    if rec.audio_path != final:
        os.replace(col.bench_dir(dom) / rec.audio_path, col.bench_dir(dom) / final)
    return dataclasses.replace(rec, audio_path=final)


def _ingest_locked(cfg: Config, col: UserCollection, dom: str, word: str, srcs: Sequence[Path], progress: bool,
                   workers: Optional[int]) -> list[IngestedRecording]:
    """:func:`ingest` while holding the collection's ingest lock."""
    from .extract.pipeline import extract_domain
    from .index import SegmentIndex
    existing = {r.id: r for r in col.recordings(dom)}
    pending = part_path(col.manifest(dom))           # the extractor's view: published + staged recordings
    staged: list[tuple[Recording, Path, str, bool]] = []
    try:
        staged = _stage_sources(col, dom, word, srcs, existing, progress)
        view = {**existing, **{rec.id: rec for rec, *_ in staged}}
        write_jsonl(pending, sorted(view.values(), key=lambda r: r.id))
        w = int(cfg.extract.get("workers", 1)) if workers is None else int(workers)
        rep = extract_domain(cfg, dom, recordings=[rec.id for rec, *_ in staged], bench_dir=col.bench_dir(dom),
                             out_dir=col.extract_dir(dom), workers=w, progress=progress, manifest=pending)
        errors = {q["recording_id"]: q["error"] for q in rep["quarantine"]}
        ix = SegmentIndex.build(col.extract_dir(dom), col.index_dir(dom), progress=progress,
                                durations={r.id: r.duration for r in view.values()})
        out = dict(existing)
        for rec, *_ in staged:
            if rec.id in errors:
                out.pop(rec.id, None)      # its outputs were quarantined: it is not answerable
            else:
                out[rec.id] = _publish(col, dom, rec)
        _write_manifest(col.manifest(dom), list(out.values()))
    finally:
        pending.unlink(missing_ok=True)
        for rec, *_ in staged:              # a staged copy left by a failure or a quarantine
            if rec.audio_path != f"audio/{rec.id}.wav":
                (col.bench_dir(dom) / rec.audio_path).unlink(missing_ok=True)
    result = []
    for rec, src, sha, fresh in staged:
        segs = ix.segments(rec.id) if rec.id not in errors else []
        result.append(IngestedRecording(rec.id, dom, col.name, str(src), str(col.bench_dir(dom) / "audio" / f"{rec.id}.wav"),
                                        rec.duration, sha, fresh, len(segs),
                                        len({s.speaker for s in segs if s.speaker}), errors.get(rec.id)))
    return result


def sample_recording(cfg: Optional[Config] = None) -> Path:
    """A short real recording to try things on: the two-speaker phone call shipped in the
    pyannote.audio wheel (30 s, Diane and Sheila), which ``scripts/bootstrap.sh`` extracts into
    ``.cache/harp/pyannote_sample/`` with its reference transcript (``sample.stm``)."""
    p = _cfg(cfg).root / ".cache" / "harp" / "pyannote_sample" / "sample.wav"
    if not p.is_file():
        raise FileNotFoundError(f"{p} is missing: run scripts/bootstrap.sh (it extracts the pyannote.audio "
                                f"sample call), or pass your own audio files")
    return p


# ----------------------------------------------------------------------------- question intents
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "ninth": 9, "tenth": 10, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5}
_ORD_RE = r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d+(?:st|nd|rd|th))"
_WHO = r"(?:speaker|voice|person|talker|participant)"


@dataclass(frozen=True)
class Intent:
    """What a question asks, read from its text only."""
    name: str                       # speaker_first | speaker_last | speaker_at | said_at | when_said |
    #                                 n_speakers | talk_time | transcript | agent
    speaker: Optional[int] = None   # 1-based order of first appearance; -1: the last one
    time: Optional[str] = None      # a time phrase ("around 1:30")
    words: tuple[str, ...] = ()     # what to look for in the transcript


def _speaker_ref(low: str) -> Optional[int]:
    m = re.search(rf"\b(?:the\s+)?{_ORD_RE}\s+(?:new\s+|other\s+)?{_WHO}\b", low)
    if m:
        w = m.group(1)
        return -1 if w == "last" else _ORDINALS.get(w) or int(re.match(r"\d+", w).group(0))
    m = re.search(rf"\b{_WHO}\s+(?:number\s+|no\.?\s*|#)?(\d+|[a-h])\b", low)
    if m:
        v = m.group(1)
        return int(v) if v.isdigit() else ord(v) - ord("a") + 1
    if re.search(r"\b(other|second|another)\s+(one|voice|person)\b", low):
        return 2
    return None


def _quoted_or_topic(text: str) -> tuple[str, ...]:
    from .agent.planner import _content_words
    m = re.search(r"[\"“'‘]([^\"”'’]{2,})[\"”'’]", text)
    if m:
        return tuple(_content_words(m.group(1)))
    m = re.search(r"\b(?:say|says|said|mention|mentions|mentioned|talk(?:s|ed)? about|discuss(?:es|ed)?|"
                  r"bring(?:s)? up|word)\s+(.+?)[?.!]*$", text, re.I)
    if m:
        return tuple(w for w in _content_words(m.group(1)) if w not in ("first", "time", "recording"))
    return ()


def question_intent(text: str) -> Intent:
    """Classify a free-text question from its words only (never from benchmark labels).

    Structural questions get their own intent; everything else is ``agent`` (the HARP planner
    and answerer of the chosen setup).

    >>> question_intent("Who is speaking at 1:30?")
    Intent(name='speaker_at', speaker=None, time='around 1:30', words=())
    >>> question_intent("How many people are in this call?").name
    'n_speakers'
    >>> question_intent("When does someone mention tomatoes?").words
    ('tomatoes',)
    >>> question_intent("Which emotion does the host show around 2 minutes?").name
    'agent'
    """
    from .agent.planner import _time_phrases
    low = " ".join(text.lower().split())
    times = _time_phrases(text)
    spk = _speaker_ref(low)
    if re.search(rf"\bhow many\s+(?:different\s+|distinct\s+)?(?:{_WHO}s|people|voices|persons|participants)\b",
                 low):
        return Intent("n_speakers")
    if re.search(r"\b(transcript|transcribe|what is (?:this|the) (?:recording|conversation|call|audio) about|"
                 r"summar(?:y|ise|ize))\b", low):
        return Intent("transcript", time=times[0] if times else None)
    if re.search(r"\bhow (?:long|much)\b.*\b(talk|speak|say)", low) or re.search(
            r"\bwho\s+(?:talks|speaks)\s+(?:the\s+)?most\b", low):
        return Intent("talk_time", speaker=spk)
    if spk is not None and re.search(r"\bwhen\b|\bat what (?:time|point)\b|\bwhat time\b", low):
        if re.search(r"\b(last|stop|stops|finish|finishes|end|ends)\b(?!.*\b(first|start)\b)", low) and \
                not re.search(rf"\blast\s+{_WHO}", low):
            return Intent("speaker_last", speaker=spk)
        return Intent("speaker_first", speaker=spk)
    if re.search(r"\bwho\b", low) and re.search(r"\b(speak|speaking|talk|talking|say|said|says)\b", low) and times:
        return Intent("speaker_at", time=times[0])
    if re.search(r"\bwhen\b|\bat what (?:time|point)\b|\bwhat time\b", low) and re.search(
            r"\b(say|says|said|mention|mentions|mentioned|talk(?:s|ed)? about|discuss|bring|word)\b", low):
        words = _quoted_or_topic(text)
        if words:
            return Intent("when_said", words=words)
    if re.search(r"\bwhat\b", low) and re.search(r"\b(say|says|said|saying|talk|talking|discuss|discussed|"
                                                 r"mention|mentioned)\b", low) and times:
        return Intent("said_at", time=times[0])
    return Intent("agent")


def benchmark_task(text: str, domain: str, roles: Sequence[str]) -> Optional[str]:
    """Interim: the agent's answer rule for a free-text question, read from its words.

    The rule answerer still dispatches on a task name; until it classifies the question itself
    (issue #17) ``ask`` derives the name here from the question text and the reference roles
    given -- never from benchmark labels.  ``None``: no rule fits (an "unsupported question").

    >>> benchmark_task("How does the speaker feel around 2 minutes?", "emotion", ())
    'state'
    >>> benchmark_task("Does the patient cough?", "clinical", ())
    'exhibited'
    """
    low = text.lower()
    roles = set(roles)
    if domain == "emotion":
        if "E" in roles and re.search(r"\bwhen\b|\bwhere\b|\bat what\b|\bfind\b|\blocate\b", low):
            return "locate"
        if {"A", "B"} <= roles:
            return "comparison"
        if re.search(r"\b(valence|arousal|dominance|positiv|negativ|energ|calm|excit|confiden)", low) and \
                re.search(r"\b(change|chang(es|ed|ing)|shift|evolve|rise|rising|fall|falling|over the)\b", low):
            return "change"
        if re.search(r"\b(emotion|feel|feeling|felt|mood|sound|sounds|happy|sad|angry|anger|fear|surprise|"
                     r"disgust|neutral|upset|tone)\b", low):
            return "state"
        return None
    if domain == "clinical":
        if re.search(r"\b(cough|coughs|coughing|coughed|audible|exhibit|heard|hear|wheez|sneez)", low) and \
                not re.search(r"\b(mention|mentions|mentioned|report|reports|reported|complain|say|said|talk)", low):
            return "exhibited"
        if re.search(r"\b(symptom|breath|chest|cough|mention|report|complain|throat|fever)", low):
            return "reported"
        return None
    if domain == "song":
        if {"A", "B"} & roles:
            return "audio"
        if re.search(r"\b(better|best|prefer|higher|quality|aesthetic|compare|more pleasant)", low):
            if re.search(r"\bsongs?\b", low) and re.search(_ORD_RE + r"\b[^.?]*\bsong", low):
                return "position"
            return "time"
        return None
    return None


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
        from .agent.evidence import render_labels
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


def _speakers_in_order(segs: Sequence[Segment]) -> list[str]:
    return list(dict.fromkeys(s.speaker for s in sorted(segs, key=lambda s: s.start) if s.speaker))


def _window(phrase: str, duration: float, point_window: float):
    from .timespan import localize
    return localize(phrase, duration, point_window=point_window)


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


def _facts_answer(it: Intent, segs: Sequence[Segment], turns: Sequence[Segment], duration: float) -> tuple:
    """(plan lines, evidence rows, answer, rationale, value) from the diarizer's turns (who speaks
    when) and the extracted segments (what is said)."""
    segs = sorted(segs, key=lambda s: s.start)
    turns = sorted(turns, key=lambda s: s.start)
    order = _speakers_in_order(turns)
    names = ", ".join(f"{i}. {s}" for i, s in enumerate(order, 1))
    if not segs:
        return (["full recording · the extracted segments"], [], "no speech found",
                "Extraction found no segments in this recording.", None)
    if it.name in ("speaker_first", "speaker_last"):
        plan = ["full recording · diarization turns, speakers in order of first appearance"]
        n = it.speaker
        if n is None or n == 0 or (n > 0 and n > len(order)):
            return (plan, [_row(s) for s in turns[:1]], f"only {len(order)} speaker(s) found",
                    f"Diarization found {len(order)} speaker(s) ({names}); there is no speaker {n}.", None)
        spk = order[-1] if n == -1 else order[n - 1]
        mine = [s for s in turns if s.speaker == spk]
        s = mine[0] if it.name == "speaker_first" else mine[-1]
        t = s.start if it.name == "speaker_first" else s.end
        which = "first talks" if it.name == "speaker_first" else "last talks (until)"
        before = [x for x in turns if x.end <= s.start + 1e-6 and x is not s][-1:]
        why = (f"Speakers in order of first appearance: {names}. {spk} {which} at {format_time(t)} "
               f"({t:.1f} s)" + (f', saying "{s.text}"' if s.text else "") + ".")
        return plan, [_row(x) for x in before + [s]], f"{format_time(t)} ({t:.1f} s)", why, round(t, 2)
    if it.name == "n_speakers":
        dur = {k: round(sum(s.end - s.start for s in turns if s.speaker == k), 1) for k in order}
        return (["full recording · distinct speakers (diarization)"],
                [_row(next(s for s in turns if s.speaker == k)) for k in order], str(len(order)),
                f"Diarization found {len(order)} speaker(s): " + "; ".join(f"{k} ({v} s of speech, first at "
                f"{format_time(next(s.start for s in turns if s.speaker == k))})" for k, v in dur.items()) + ".",
                len(order))
    if it.name == "talk_time":
        dur = {k: round(sum(s.end - s.start for s in turns if s.speaker == k), 1) for k in order}
        if it.speaker is not None and (0 < it.speaker <= len(order) or it.speaker == -1):
            k = order[-1] if it.speaker == -1 else order[it.speaker - 1]
            return (["full recording · speaking time per speaker (diarization)"],
                    [_row(s) for s in turns if s.speaker == k], f"{dur[k]} s",
                    f"{k} holds {dur[k]} s of turns out of {duration:.1f} s.", dur[k])
        top = max(order, key=lambda k: dur[k])
        return (["full recording · speaking time per speaker (diarization)"],
                [_row(s) for s in turns if s.speaker == top][:3], top,
                "Speaking time: " + ", ".join(f"{k} {v} s" for k, v in dur.items()) + ".", dur)
    if it.name in ("speaker_at", "said_at"):
        try:
            w = _window(it.time, duration, 0.5)
        except LocalizeError as e:
            return ([f"{it.time} · could not be read"], [], "unsupported question", str(e), None)
        pool = turns if it.name == "speaker_at" else segs
        end = min(w.end, duration)
        if end - w.start <= 1.5:                      # a point in time: the turn covering it, else the nearest
            t = (w.start + end) / 2
            hit = [sorted(pool, key=lambda s: (0 if s.start <= t <= s.end else 1,
                                               min(abs(s.start - t), abs(s.end - t))))[0]]
            where = f"at {format_time(t)}"
        else:                                         # a range: every turn overlapping it
            hit = [s for s in pool if s.end > w.start and s.start < end] or \
                [min(pool, key=lambda s: abs(s.start - w.start))]
            where = f"{format_time(w.start)}–{format_time(end)}"
        plan = [f"{it.time} ({where}) · time tool: the {'diarization turns' if pool is turns else 'segments'} "
                f"{where}"]
        if it.name == "speaker_at":
            spk = list(dict.fromkeys(s.speaker for s in hit if s.speaker))
            rank = ", ".join(f"{k} = speaker {order.index(k) + 1}" for k in spk if k in order)
            return (plan, [_row(s) for s in hit], " and ".join(spk) or "unknown speaker",
                    f"Diarization turn(s) {', '.join(f'{format_time(s.start)}–{format_time(s.end)} {s.speaker}' for s in hit)} "
                    f"cover {where} (in order of appearance: {rank}).", spk[0] if len(spk) == 1 else spk)
        text = " ".join(s.text for s in hit if s.text)
        return (plan, [_row(s) for s in hit], text or "(no words recognised)",
                "Transcript (offline ASR) of " + ", ".join(f"{s.speaker}'s turn {format_time(s.start)}–"
                                                           f"{format_time(s.end)}" for s in hit) + ".", text)
    if it.name == "when_said":
        words = [w.lower() for w in it.words]
        plan = [f"full recording · keyword tool: {', '.join(words)} in the transcript"]
        hits = []
        for s in segs:
            toks = re.findall(r"[a-z0-9']+", (s.text or "").lower())
            n = sum(1 for w in words if any(tok.startswith(w[:max(4, len(w) - 2)]) for tok in toks))
            if n:
                hits.append((n, s))
        if not hits:
            return (plan, [], "not found", f"No transcribed turn contains {', '.join(words)} (offline ASR can "
                                            f"miss words).", None)
        best = max(h[0] for h in hits)
        found = [s for n, s in hits if n == best]
        s = found[0]
        t = s.start
        for wd in (s.custom or {}).get("words", []):
            if any(str(wd[0]).lower().startswith(w[:max(4, len(w) - 2)]) for w in words):
                t = float(wd[1])
                break
        return (plan, [_row(x) for x in found[:3]], f"{format_time(t)} ({t:.1f} s)",
                f'{s.speaker} says "{s.text}" in {format_time(s.start)}–{format_time(s.end)}'
                + (f"; also in {len(found) - 1} other turn(s)" if len(found) > 1 else "") + ".", round(t, 2))
    if it.name == "transcript":
        rows = [_row(s) for s in segs]
        if it.time:
            try:
                w = _window(it.time, duration, 0.5)
                rows = [r for r in rows if r.end > w.start and r.start < w.end]
            except LocalizeError:
                pass
        text = " ".join(f"{r.speaker}: {r.text}" for r in rows if r.text)
        return (["full recording · every turn (diarization + offline ASR)"], rows, text or "(no words recognised)",
                f"{len(rows)} turns by {len(order)} speaker(s), transcribed offline.", None)
    raise ValueError(f"not a structural intent: {it.name}")


def _config_fingerprint(cfg: Config, agent: str) -> dict:
    raw = cfg.data
    keep = {"agent": raw.get("agent", {}), "extract": {k: raw["extract"].get(k) for k in
                                                        ("backends", "options", "sample_rate", "max_seg_sec",
                                                         "min_turn_sec", "fill_gaps_sec", "segmenter")},
            "tie_delta": (raw.get("benchmark") or {}).get("tie_delta")}
    if agent == "llm":
        keep["llm"] = raw.get("llm", {})
    return json.loads(json.dumps(keep, sort_keys=True, default=str))


def _check_ref_samples(role: str, src: str, p: Path, dur: float) -> None:
    """A reference clip must hold a comparable sound: at least :data:`MIN_REF_SEC`, finite samples
    (:func:`harp_lib.audio.load` refuses NaN / inf), not digital silence."""
    from . import audio
    if dur < MIN_REF_SEC:
        raise UserDataError(f"--ref {role}={src}: the clip is {dur:.2f} s long; reference clips need at least "
                            f"{MIN_REF_SEC} s of sound to compare with")
    try:
        wave = audio.load(p, sr=SR)
    except audio.AudioError as e:
        raise UserDataError(f"--ref {role}={src}: {_why(e, p)}") from None
    if not len(wave) or float(abs(wave).max()) == 0.0:
        raise UserDataError(f"--ref {role}={src}: the clip is silent (all samples 0): nothing to compare with")


def _stage_ref(col: UserCollection, domain: str, role: str, src: str) -> tuple[str, str]:
    """Copy a reference clip into ``<domain>/refs/<sha>.wav`` (16 kHz mono); returns (rel path, sha)."""
    from . import audio
    p = Path(os.path.expanduser(src)).resolve()
    if role not in REFERENCE_ROLES:
        raise UserDataError(f"--ref {role}={src}: unknown role {role!r} (roles: {', '.join(REFERENCE_ROLES)})")
    if not p.is_file():
        raise UserDataError(f"--ref {role}={src}: no such audio file")
    try:
        dur = audio.probe(p).duration
    except audio.AudioError as e:
        raise UserDataError(f"--ref {role}={src}: not a readable audio file ({_why(e, p)})") from None
    if dur > MAX_REF_SEC:                  # checked on the header: nothing is read or copied first
        raise UserDataError(f"--ref {role}={src}: the clip is {dur:.1f} s long; reference clips are at most "
                            f"{MAX_REF_SEC:.0f} s (cut out the part you mean, e.g. ffmpeg -ss START -t 10 -i CLIP "
                            f"clip.wav)")
    _check_ref_samples(role, src, p, dur)
    sha = _sha256(p)
    dst = col.bench_dir(domain) / "refs" / f"{sha[:20]}.wav"
    if not dst.exists():
        _convert(p, dst)
    return f"refs/{dst.name}", sha


def _extraction_state(col: UserCollection, rec: Recording) -> dict:
    """sha256 of what an answer about ``rec`` reads: its extracted segments (times, speakers,
    transcript, labels), its vectors, the embedding backends (``spaces.json``) and the index's
    segment list.  Part of the answer-cache key, so a re-extraction (a re-ingest of changed audio,
    other backends) is never answered from the cache of the old one.  A recording without
    extracted segments is an error, not an empty answer."""
    from .paths import ExtractPaths
    xp, ext = ExtractPaths(col.extract_dir(rec.domain)), col.extract_dir(rec.domain)
    seg = xp.segments(rec.id)
    if not seg.is_file():
        raise UserDataError(f"recording {rec.id!r} has no extracted segments ({seg}); run `harp ingest "
                            f"{rec.custom.get('source', '<file>')} --domain {rec.custom.get('domain_word', rec.domain)}` "
                            f"again")
    files = [seg, ext / "spaces.json", col.index_dir(rec.domain) / "segments.jsonl",
             *sorted((ext / "vectors").glob(f"{rec.id}.*.npy"))]
    return {p.name: (_sha256(p) if p.is_file() else None) for p in files}


def ask(recording_id: str, question: str, *, refs: Optional[Mapping[str, str]] = None, setup: str = "A5",
        agent: str = "rule", collection_name: Optional[str] = None, cfg: Optional[Config] = None,
        use_cache: bool = True) -> Answer:
    """Answer a free-text question about an ingested recording (see the module doc).

    ``refs`` maps a role (A, B, E) to an audio clip ("like this clip").  The answer is cached
    under ``<collection>/answers/<key>.json``; ``use_cache=False`` recomputes (and rewrites) it.
    """
    from .config import get_setup
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
    key_src = {"v": ANSWER_CACHE_VERSION, "question": question, "recording": rec.id,
               "audio_sha256": _sha256(wav), "refs": {r: sha for r, (_, sha) in staged.items()},
               "setup": s.name, "agent": agent, "config": _config_fingerprint(cfg, agent),
               "extraction": _extraction_state(col, rec)}
    key = hashlib.sha256(json.dumps(key_src, sort_keys=True).encode()).hexdigest()
    cache = col.answers_dir / f"{key}.json"
    if use_cache and cache.exists():
        try:
            return Answer.from_dict({**json.loads(cache.read_text(encoding="utf-8"))["answer"], "cached": True})
        except (ValueError, KeyError, TypeError):
            pass                                   # an unreadable cache entry is recomputed
    ans = _answer(cfg, col, rec, question, {r: rel for r, (rel, _) in staged.items()}, s, agent, key)
    if ans.error is None:
        _store_answer(cache, {"key": key_src, "answer": ans.to_dict()})
    return ans


def _store_answer(cache: Path, entry: dict) -> None:
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
        import logging
        where = e.filename or cache.parent
        why = ("is a file, not a folder" if cache.parent.exists() and not cache.parent.is_dir()
               else e.strerror or e)
        logging.getLogger(__name__).warning("answer not cached: %s: %s", where, why)


def _answer(cfg: Config, col: UserCollection, rec: Recording, question: str, refs: dict, s, agent: str,
            key: str) -> Answer:
    from .index import SegmentIndex
    dom = rec.domain
    idx_dir = col.index_dir(dom)
    if not idx_dir.exists():
        raise UserDataError(f"{idx_dir} is missing: run `harp ingest` again for {rec.custom.get('source', rec.id)}")
    index = SegmentIndex.load(idx_dir)
    segs = index.segments(rec.id)
    base = dict(recording_id=rec.id, collection=col.name, domain=dom, question=question, setup=s.name,
                agent=agent, key=key)
    it = question_intent(question)
    if it.name != "agent" and not refs:
        if not s.show_metadata:
            return Answer(**base, intent=it.name, plan=(), evidence=(), answer="unsupported question",
                          rationale=f"setup {s.name} hides speakers and transcripts from the answerer; ask with "
                                    f"--setup A5 (or A1-A3)")
        plan, rows, ans, why, value = _facts_answer(it, segs, _turns(col, dom, rec.id, segs), rec.duration)
        return Answer(**base, intent=it.name, plan=tuple(plan), evidence=tuple(rows), answer=ans, rationale=why,
                      value=value)
    task = benchmark_task(question, dom, tuple(refs))
    if task is None:
        return Answer(**base, intent="unsupported", plan=(), evidence=(), answer="unsupported question",
                      rationale=_unsupported_help(dom))
    return _agent_answer(cfg, col, rec, index, question, refs, s, agent, task, base)


def _unsupported_help(domain: str) -> str:
    dom = {"emotion": "emotions (\"How does the host feel around 2 minutes?\", \"Does valence rise over the "
                      "first minute?\", --ref E=clip.wav \"When does someone sound like this?\")",
           "clinical": "symptoms (\"Does the patient mention breathing problems?\", \"Does the patient "
                       "cough?\")",
           "song": "songs (\"Which is better, the first or the second song?\", --ref A=a.wav --ref B=b.wav)"}[domain]
    return ("No answer rule fits this question.  Ask about speakers and times (\"When does the second speaker "
            "first talk?\", \"Who is speaking at 1:30?\", \"What is said around 2 minutes?\", \"When does "
            "someone mention X?\", \"How many speakers are there?\") or about " + dom + ".")


def _in_answer_space(task: str, answer: str) -> bool:
    """Whether ``answer`` says something in the vocabulary of query type ``task`` (the task's own
    ``parse_decision``: a yes / no, an emotion, a choice, a direction, a time ...)."""
    from .tasks import registry
    said = registry.get(task).parse_decision(str(answer or ""))
    if isinstance(said, tuple):
        return any(v not in (None, [], ()) for v in said)
    return said not in (None, [], (), "")


_TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, window titles) and
    control characters, whitespace collapsed: a question is echoed as text, never as terminal
    commands (issue #28).

    >>> printable("How \x1b[31mdoes\x1b[0m he\x07 feel?\x1b]0;pwned\x07")
    'How does he feel?'
    """
    return " ".join(_CONTROL.sub(" ", _TERMINAL_CODES.sub("", str(text))).split())


def _llm_preflight(cfg: Config) -> None:
    """``--agent llm`` with an LLM server on this machine (``llm.backend: openai`` at localhost /
    127.0.0.1 / ::1, the params.yaml default): one TCP connect (1 s at most) before anything is
    sent, so a machine without a server says so at once instead of after the client's retries
    and back-off (~6-14 s).  A remote server is left to the client (its own retries)."""
    import socket
    from urllib.parse import urlparse
    llm = cfg.get("llm")
    if llm.get("backend") != "openai":
        return
    url = urlparse(str(llm.get("base_url") or ""))
    if url.hostname not in ("localhost", "127.0.0.1", "::1"):
        return
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=1.0).close()
    except OSError as e:
        raise UserDataError(f"--agent llm: no LLM server at {llm.get('base_url')} ({e.strerror or e}), and no "
                            f"other LLM is configured (llm.backend: openai); start one (scripts/serve_vllm.sh), "
                            f"use the offline model (-S llm.backend=local -S llm.model=qwen2.5-coder-1.5b, docs/agent.md), or --agent rule") from None


def _agent_answer(cfg, col, rec, index, question, refs, s, agent, task, base) -> Answer:
    from .agent.runner import Agent
    from .schema import Query
    if agent == "llm":
        _llm_preflight(cfg)
    q = Query(f"ask_{base['key'][:12]}", rec.domain, rec.id, task, question, {}, references=dict(refs))
    try:
        a = Agent(index, s, cfg, domain=rec.domain, planner=agent, answerer=agent)
    except Exception as e:  # noqa: BLE001 - an LLM client that cannot be built: one clear message
        if agent == "llm":
            raise UserDataError(f"--agent llm: the local LLM is not available ({type(e).__name__}: {e}); "
                                f"use --agent rule, or set up the llm: section of params.yaml "
                                f"(docs/your_own_audio.md)") from None
        raise
    pred = a(q, rec, col.bench_dir(rec.domain))
    if pred.error and agent == "llm" and "LLM" in pred.error:
        raise UserDataError(f"--agent llm: the local LLM is not available ({pred.error}); use --agent rule")
    if agent == "llm" and not pred.error and not _in_answer_space(task, pred.answer):
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


# ----------------------------------------------------------------------------- CLI
def ingest_add_arguments(ap) -> None:
    """``harp ingest PATH... --domain {speech,clinical,song} [--collection NAME]`` (docs/your_own_audio.md)."""
    ap.add_argument("paths", nargs="+", metavar="PATH", help="audio files (anything ffmpeg reads)")
    ap.add_argument("--domain", required=True, choices=sorted(DOMAIN_ALIASES),
                    help="speech (conversations, podcasts: the emotion pipeline) | clinical | song")
    ap.add_argument("--collection", default="default", help="user collection name (default: default)")
    ap.add_argument("--workers", type=positive_int, default=None, help="extraction processes (default extract.workers)")
    ap.add_argument("--json", action="store_true", help="print the records as JSON lines")


def ingest_run(cfg: Config, a) -> int:
    try:
        recs = ingest(a.paths, a.domain, collection_name=a.collection, cfg=cfg, progress=not a.quiet,
                      workers=a.workers)
    except UserDataError as e:
        print(f"harp ingest: {e}", file=sys.stderr)
        return 2
    for r in recs:
        if a.json:
            print(json.dumps(asdict(r), sort_keys=True))
        elif r.error:
            print(f"{r.id}: FAILED ({r.error}) -- from {r.source}")
        else:
            print(f"{r.id}: {r.duration:.1f} s, {r.segments} segments, {r.speakers} speaker(s) "
                  f"[{r.domain} pipeline, collection {r.collection}{'' if r.converted else ', unchanged'}] "
                  f"-- from {r.source}")
    if not a.json:
        ok = [r for r in recs if not r.error]
        if ok:
            print(f'next: harp ask {ok[0].id} "When does the second speaker first talk?"')
    return 1 if any(r.error for r in recs) else 0


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
    import logging
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
