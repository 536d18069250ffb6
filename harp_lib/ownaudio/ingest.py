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

Questions about an ingested recording (``harp ask``) are answered by :mod:`harp_lib.ownaudio.ask`;
this module holds the collections, ingest, the reference clips staged into a collection and the
extraction state an answer reads.

>>> safe_id("My Call (final) #2.MP3")
'My_Call_final_2'
>>> unique_id("call", {"call", "call_2"})
'call_3'
>>> resolve_domain("speech")
'emotion'
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from harp_lib.core.atomic import part_path
from harp_lib.config import Config, positive_int
from harp_lib.core.hashing import file_sha256
from harp_lib.core.schema import DOMAINS, REFERENCE_ROLES, Recording, SchemaError, read_jsonl, write_jsonl

__all__ = ["DOMAIN_ALIASES", "UserDataError", "UserCollection", "IngestedRecording", "safe_id", "unique_id",
           "resolve_domain", "collection", "collections", "find_recording", "ingest", "sample_recording",
           "ingest_add_arguments", "ingest_run"]

#: ``--domain`` words -> the package's pipeline domain (``harp_lib.core.schema.DOMAINS``).
DOMAIN_ALIASES: dict[str, str] = {"speech": "emotion", "emotion": "emotion", "podcast": "emotion",
                                  "clinical": "clinical", "song": "song", "music": "song"}
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
SR = 16000
#: Reference clips (``--ref ROLE=CLIP``) are short examples of a sound: at most this long (checked on
#: the file's header, before anything is read or copied) ...
MAX_REF_SEC = 60.0
#: ... and at least this long (seconds).
MIN_REF_SEC = 0.3


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
    from harp_lib.config import load_config
    return load_config()


def collection(cfg: Optional[Config] = None, name: str = "default") -> UserCollection:
    """The user collection ``name`` (a safe name) under ``<paths.data>/user/``.

    Refuses a data root inside ``paths.results`` (user runs never write into ``results/``).
    """
    cfg = _cfg(cfg)
    if not name or _SAFE.search(name) or name.strip("_-") != name:
        raise UserDataError(f"collection name {name!r}: use letters, digits, '_' and '-' only")
    from harp_lib.core.paths import DataPaths, IdError
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
def _why(err: Exception, path: Path) -> str:
    """An error's text on one line, without the file name the message already starts with."""
    msg = " ".join(str(err).replace(str(path) + ":", " ").split())
    return msg[:300]


def _convert(src: Path, dst: Path) -> None:
    """``src`` -> 16 kHz mono 16-bit WAV at ``dst`` (ffmpeg; libsndfile + resampling without it)."""
    from harp_lib.core import audio
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
    speakers: int = 0                 # distinct diarized speakers (0 in the song pipeline)
    error: Optional[str] = None
    songs: int = 0                    # songs the song pipeline found (its segments are <= 15 s chunks of them)

    def to_dict(self) -> dict:
        return asdict(self)


def ingest(paths: Sequence[os.PathLike | str], domain: str = "speech", *, collection_name: str = "default",
           cfg: Optional[Config] = None, progress: bool = True, workers: Optional[int] = None,
           num_speakers: Optional[int] = None, min_speakers: Optional[int] = None,
           max_speakers: Optional[int] = None, sound_events: bool = False) -> list[IngestedRecording]:
    """Ingest audio files into a user collection, extract and index them.

    Re-ingesting the same file path keeps its id; if its audio changed it is converted and
    extracted again (the extraction cache follows the audio's content hash and options).
    ``num_speakers`` (exact) or ``min_speakers`` / ``max_speakers`` (bounds) tell the diarizer how
    many speakers to find (:func:`harp_lib.extract.settings.with_speaker_counts`); another count
    than the last ingest's re-extracts, and a bad one is a :class:`UserDataError` before anything
    is written.  ``sound_events``: every segment also gets YAMNet's sound events (laughter, music,
    applause, cough, ...: :func:`harp_lib.extract.settings.with_sound_events`).

    One ingest at a time per collection and domain (:func:`harp_lib.core.locks.stage_lock`, stage
    ``ingest``; a second one waits and says who holds it), so ids stay unique and no recording
    is lost from ``recordings.jsonl``.  A recording enters the manifest only once its extraction
    and the index are complete: a killed or failed ingest leaves the manifest as it was.

    Returns one :class:`IngestedRecording` per path, in order.  A file that cannot be read
    raises :class:`UserDataError` before anything is written; a recording the extractor
    quarantines is returned with ``error`` set and is not added to the manifest.
    """
    from harp_lib.extract.settings import with_sound_events, with_speaker_counts
    from harp_lib.core.locks import stage_lock
    dom = resolve_domain(domain)
    try:
        cfg = with_speaker_counts(_cfg(cfg), dom, num_speakers, min_speakers, max_speakers)
        cfg = with_sound_events(cfg) if sound_events else cfg
    except ValueError as e:
        raise UserDataError(f"{e} (--domain {domain})" if "pipeline" in str(e) else str(e)) from None
    col = collection(cfg, collection_name)
    srcs = _ingest_sources(paths)
    with stage_lock(col.bench_dir(dom), "ingest"):
        return _ingest_locked(cfg, col, dom, str(domain), srcs, progress, workers)


def _ingest_sources(paths: Sequence[os.PathLike | str]) -> list[Path]:
    """The absolute, readable, distinct audio files of ``paths`` (else :class:`UserDataError`)."""
    from harp_lib.core import audio
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
    from harp_lib.core import audio
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
    from harp_lib.core import audio
    from harp_lib.core.progress import progress as bar
    by_source = {str(r.custom.get("source")): r for r in existing.values()}
    taken = set(col.all_ids())
    staged = []
    for src in bar(srcs, desc=f"convert to {SR // 1000} kHz mono", total=len(srcs)) if progress else srcs:
        sha = file_sha256(src)
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
    from harp_lib.extract.pipeline import extract_domain
    from harp_lib.retrieval.index import SegmentIndex
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
        write_jsonl(col.manifest(dom), sorted(out.values(), key=lambda r: r.id))      # atomic (harp_lib.core.atomic)
    finally:
        pending.unlink(missing_ok=True)
        for rec, *_ in staged:              # a staged copy left by a failure or a quarantine
            if rec.audio_path != f"audio/{rec.id}.wav":
                (col.bench_dir(dom) / rec.audio_path).unlink(missing_ok=True)
    from harp_lib.core.timespan import song_spans
    result = []
    for rec, src, sha, fresh in staged:
        segs = ix.segments(rec.id) if rec.id not in errors else []
        result.append(IngestedRecording(rec.id, dom, col.name, str(src), str(col.bench_dir(dom) / "audio" / f"{rec.id}.wav"),
                                        rec.duration, sha, fresh, len(segs), 0 if dom == "song" else
                                        len({s.speaker for s in segs if s.speaker}),
                                        errors.get(rec.id), len(song_spans(segs)) if dom == "song" else 0))
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


# ----------------------------------------------------------------------------- what an answer reads
def _check_ref_samples(role: str, src: str, p: Path, dur: float) -> None:
    """A reference clip must hold a comparable sound: at least :data:`MIN_REF_SEC`, finite samples
    (:func:`harp_lib.core.audio.load` refuses NaN / inf), not digital silence."""
    from harp_lib.core import audio
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
    from harp_lib.core import audio
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
    sha = file_sha256(p)
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
    from harp_lib.core.paths import ExtractPaths
    xp, ext = ExtractPaths(col.extract_dir(rec.domain)), col.extract_dir(rec.domain)
    seg = xp.segments(rec.id)
    if not seg.is_file():
        raise UserDataError(f"recording {rec.id!r} has no extracted segments ({seg}); run `harp ingest "
                            f"{rec.custom.get('source', '<file>')} --domain {rec.custom.get('domain_word', rec.domain)}` "
                            f"again")
    files = [seg, ext / "spaces.json", col.index_dir(rec.domain) / "segments.jsonl",
             *sorted((ext / "vectors").glob(f"{rec.id}.*.npy"))]
    return {p.name: (file_sha256(p) if p.is_file() else None) for p in files}


# ----------------------------------------------------------------------------- CLI
def ingest_add_arguments(ap) -> None:
    """``harp ingest PATH... --domain {speech,clinical,song} [--collection NAME] [--num-speakers N |
    --min-speakers N --max-speakers N] [--sound-events]`` (docs/your_own_audio.md)."""
    ap.add_argument("paths", nargs="+", metavar="PATH", help="audio files (anything ffmpeg reads)")
    ap.add_argument("--domain", required=True, choices=sorted(DOMAIN_ALIASES),
                    help="speech (conversations, podcasts: the emotion pipeline) | clinical | song")
    ap.add_argument("--collection", default="default", help="user collection name (default: default)")
    ap.add_argument("--workers", type=positive_int, default=None, help="extraction processes (default extract.workers)")
    for flag, what in (("num", "exactly N speakers"), ("min", "at least N speakers"), ("max", "at most N speakers")):
        ap.add_argument(f"--{flag}-speakers", metavar="N", default=None,
                        help=f"the diarizer finds {what} (default: estimated; speech and clinical)")
    ap.add_argument("--sound-events", action="store_true",
                    help="also label laughter, music, applause, cough, ... (YAMNet; extract.sound_events)")
    ap.add_argument("--json", action="store_true", help="print the records as JSON lines")


def _count(flag: str, text: Optional[str]) -> Optional[int]:
    """A speaker-count option as an int (its range is checked by :func:`ingest`), else one error line."""
    try:
        return None if text is None else int(text)
    except ValueError:
        raise UserDataError(f"{flag} {text!r}: give a whole number of speakers, e.g. {flag} 2") from None


def ingest_run(cfg: Config, a) -> int:
    try:
        counts = {f"{k}_speakers": _count(f"--{k}-speakers", getattr(a, f"{k}_speakers")) for k in ("num", "min", "max")}
        recs = ingest(a.paths, a.domain, collection_name=a.collection, cfg=cfg, progress=not a.quiet,
                      workers=a.workers, sound_events=bool(getattr(a, "sound_events", False)), **counts)
    except UserDataError as e:
        print(f"harp ingest: {e}", file=sys.stderr)
        return 2
    for r in recs:
        if a.json:
            print(json.dumps(asdict(r), sort_keys=True))
        elif r.error:
            print(f"{r.id}: FAILED ({r.error}) -- from {r.source}")
        else:
            found = (f"{r.songs} song(s) in {r.segments} segments" if r.domain == "song" else
                     f"{r.segments} segments, {r.speakers} speaker(s)")
            print(f"{r.id}: {r.duration:.1f} s, {found} [{r.domain} pipeline, collection {r.collection}"
                  f"{'' if r.converted else ', unchanged'}] -- from {r.source}")
    ok = [r for r in recs if not r.error]
    if ok and not a.json:
        q = "How many songs are there?" if ok[0].domain == "song" else "When does the second speaker first talk?"
        print(f'next: harp ask {ok[0].id} "{q}"')
    return 1 if any(r.error for r in recs) else 0
