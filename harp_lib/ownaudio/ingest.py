"""Your own recordings in: ``harp ingest`` (converting and extracting).

``ingest`` takes any audio file ffmpeg or libsndfile reads (mp3, flac, m4a, 44.1 kHz stereo,
spaces in the name, absolute paths), gives it a safe id from its file name, converts it once
to 16 kHz mono WAV inside a *user collection* under ``paths.data`` (never under ``results/``
and apart from the benchmark; layout and ids: :mod:`harp_lib.ownaudio.collection`), probes its
duration, writes ``recordings.jsonl`` and runs the same extraction (stage 1 + 2) and indexing as
the benchmark.

Domains: ``speech`` is the emotion (podcast) pipeline -- VAD, speaker diarization, ASR, speech
embeddings and the prosody emotion labeler -- so any conversation fits it; ``clinical`` adds the
cough detector (and joins short pauses into turns); ``song`` segments music into songs and scores
their aesthetics.  ``emotion``/``podcast`` and ``music`` are accepted as aliases.

Questions about an ingested recording (``harp ask``) are answered by :mod:`harp_lib.ownaudio.ask`
(reference clips staged into a collection: :mod:`harp_lib.ownaudio.refs`); this module holds the
conversion to 16 kHz mono, ingest itself, the sample recording and the ``harp ingest`` CLI.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from harp_lib.core import audio
from harp_lib.core.atomic import part_path
from harp_lib.config import BackendError, Config, positive_int
from harp_lib.core.hashing import file_sha256
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.locks import stage_lock
from harp_lib.core.progress import progress as bar
from harp_lib.core.schema import Recording
# collection: also re-exported for notebooks/06_your_own_audio (``userdata.collection``)
from harp_lib.core.timespan import song_spans
from harp_lib.extract.pipeline import extract_domain
from harp_lib.extract.settings import extract_settings, model_for, with_overlap, with_sound_events, with_speaker_counts
from harp_lib.ownaudio.collection import (DOMAIN_ALIASES, UserCollection, UserDataError, _cfg, collection,
                                          resolve_domain, safe_id, unique_id)
from harp_lib.retrieval.index import SegmentIndex

__all__ = ["IngestedRecording", "ingest", "sample_recording", "ingest_add_arguments", "ingest_run"]

SR = 16000
DEFAULT_OVERLAP = "seg30"    # own recordings are real speech: overlap on (the benchmark's TTS voices keep it off)


# ----------------------------------------------------------------------------- audio
def _why(err: Exception, path: Path) -> str:
    """An error's text on one line, without the file name the message already starts with."""
    msg = " ".join(str(err).replace(str(path) + ":", " ").split())
    return msg[:300]


def _convert(src: Path, dst: Path) -> None:
    """``src`` -> 16 kHz mono 16-bit WAV at ``dst`` (ffmpeg; libsndfile + resampling without it)."""
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
           max_speakers: Optional[int] = None, sound_events: bool = False,
           overlap: Optional[str] = DEFAULT_OVERLAP) -> list[IngestedRecording]:
    """Ingest audio files into a user collection, extract and index them.

    Re-ingesting the same file path keeps its id; if its audio changed it is converted and
    extracted again (the extraction cache follows the audio's content hash and options).
    ``num_speakers`` (exact) or ``min_speakers`` / ``max_speakers`` (bounds) tell the diarizer how
    many speakers to find (:func:`harp_lib.extract.settings.with_speaker_counts`); another count
    than the last ingest's re-extracts, and a bad one is a :class:`UserDataError` before anything
    is written.  ``sound_events``: every segment also gets YAMNet's sound events (laughter, music,
    applause, cough, ...: :func:`harp_lib.extract.settings.with_sound_events`).  ``overlap``: the
    stage-1 overlap detector for speech and clinical recordings (default ``seg30``, pyannote
    segmentation-3.0: it relabels the diarizer's speech frame by frame and names the second speaker
    where two talk; None: off, as the benchmark runs); absent weights are a :class:`UserDataError`
    naming ``scripts/bootstrap.sh`` and ``--overlap off``.  docs/your_own_audio.md says why it is on here.

    One ingest at a time per collection and domain (:func:`harp_lib.core.locks.stage_lock`, stage
    ``ingest``; a second one waits and says who holds it), so ids stay unique and no recording
    is lost from ``recordings.jsonl``.  A recording enters the manifest only once its extraction
    and the index are complete: a killed or failed ingest leaves the manifest as it was.

    Returns one :class:`IngestedRecording` per path, in order.  A file that cannot be read
    raises :class:`UserDataError` before anything is written; a recording the extractor
    quarantines is returned with ``error`` set and is not added to the manifest.
    """
    dom = resolve_domain(domain)
    try:
        cfg = with_speaker_counts(_cfg(cfg), dom, num_speakers, min_speakers, max_speakers)
        cfg = with_sound_events(cfg) if sound_events else cfg
    except ValueError as e:
        raise UserDataError(f"{e} (--domain {domain})" if "pipeline" in str(e) else str(e)) from None
    cfg = _with_overlap(cfg, dom, overlap)
    col = collection(cfg, collection_name)
    srcs = _ingest_sources(paths)
    with stage_lock(col.bench_dir(dom), "ingest"):
        return _ingest_locked(cfg, col, dom, str(domain), srcs, progress, workers)


def _with_overlap(cfg: Config, dom: str, overlap: Optional[str]) -> Config:
    """``cfg`` with the overlap detector ``overlap`` (speech and clinical; songs have no speakers),
    built once here so that absent weights stop the ingest before anything is written."""
    if dom == "song":
        return cfg
    cfg = with_overlap(cfg, overlap)
    spec = extract_settings(cfg, dom)["overlap"]
    if spec is not None:
        try:
            model_for("overlap", spec)
        except BackendError as e:
            raise UserDataError(f"{e}; or ingest without it: --overlap off") from None
    return cfg


def _ingest_sources(paths: Sequence[os.PathLike | str]) -> list[Path]:
    """The absolute, readable, distinct audio files of ``paths`` (else :class:`UserDataError`)."""
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
    audio.validate(src, decode=False)
    try:
        import soundfile as sf  # heavy: soundfile (libsndfile), only when audio is read
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


# ----------------------------------------------------------------------------- CLI
def ingest_add_arguments(ap) -> None:
    """``harp ingest PATH... --domain {speech,clinical,song} [--collection NAME] [--num-speakers N |
    --min-speakers N --max-speakers N] [--overlap BACKEND|off] [--sound-events]`` (docs/your_own_audio.md)."""
    ap.add_argument("paths", nargs="+", metavar="PATH", help="audio files (anything ffmpeg reads)")
    ap.add_argument("--domain", required=True, choices=sorted(DOMAIN_ALIASES),
                    help="speech (conversations, podcasts: the emotion pipeline) | clinical | song")
    ap.add_argument("--collection", default="default", help="user collection name (default: default)")
    ap.add_argument("--workers", type=positive_int, default=None, help="extraction processes (default extract.workers)")
    for flag, what in (("num", "exactly N speakers"), ("min", "at least N speakers"), ("max", "at most N speakers")):
        ap.add_argument(f"--{flag}-speakers", metavar="N", default=None,
                        help=f"the diarizer finds {what} (default: estimated; speech and clinical)")
    ap.add_argument("--overlap", metavar="BACKEND", default=DEFAULT_OVERLAP, type=_overlap_arg,
                    help=f"overlapping-speech detector for speech and clinical, or 'off' (default {DEFAULT_OVERLAP}: "
                         "pyannote segmentation-3.0, the second speaker where two talk)")
    ap.add_argument("--sound-events", action="store_true",
                    help="also label laughter, music, applause, cough, ... (YAMNet; extract.sound_events)")
    ap.add_argument("--json", action="store_true", help="print the records as JSON lines")


def _count(flag: str, text: Optional[str]) -> Optional[int]:
    """A speaker-count option as an int (its range is checked by :func:`ingest`), else one error line."""
    try:
        return None if text is None else int(text)
    except ValueError:
        raise UserDataError(f"{flag} {text!r}: give a whole number of speakers, e.g. {flag} 2") from None


def _overlap_arg(text: Optional[str]) -> Optional[str]:
    """``--overlap off`` (or none / null) -> None; else the backend name."""
    return None if text is None or text.strip().lower() in ("off", "none", "null", "") else text.strip()


def ingest_run(cfg: Config, a) -> int:
    try:
        counts = {f"{k}_speakers": _count(f"--{k}-speakers", getattr(a, f"{k}_speakers")) for k in ("num", "min", "max")}
        recs = ingest(a.paths, a.domain, collection_name=a.collection, cfg=cfg, progress=not a.quiet,
                      workers=a.workers, sound_events=bool(getattr(a, "sound_events", False)),
                      overlap=getattr(a, "overlap", DEFAULT_OVERLAP), **counts)
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
