"""Helpers shared by the corpus preparers: source checks, stable seeds, spoken times, writing.

Every preparer turns a raw corpus into the benchmark layout of ``docs/architecture.md``::

    <out>/<domain>/recordings.jsonl  recordings/  references/  segments.jsonl  queries.jsonl

>>> stable_seed(42, "track_07") == stable_seed(42, "track_07")
True
>>> spoken_time(200)
'around 3 and a half minutes'
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from harp_lib.core import audio
from harp_lib.core.atomic import write_text
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.core.timespan import Span
from harp_lib.core.errors import HarpError

__all__ = ["SourceError", "Expected", "check_source", "stable_seed", "rng_for", "spoken_time",
           "sha256_file", "params_from", "copy_recording", "cut_clip", "write_corpus",
           "write_manifest", "stratified_pick", "STOPWORDS"]


class SourceError(HarpError, FileNotFoundError):
    """A raw corpus is missing files; the message lists each one and where to get it."""


@dataclass(frozen=True)
class Expected:
    """One file or folder a raw corpus must provide.

    ``what`` says what it is, ``where`` how to obtain it (licence, URL, unpack step).
    ``glob`` marks folders that must contain at least one match.
    """
    rel: str
    what: str
    where: str
    glob: Optional[str] = None

    def status(self, root: Path) -> Optional[str]:
        """``None`` when present, else a one-line explanation of what is missing."""
        p = root / self.rel
        if self.glob:
            if not p.is_dir() or not any(p.glob(self.glob)):
                return f"missing {p}/{self.glob} ({self.what}); get it from: {self.where}"
            return None
        if not p.exists():
            return f"missing {p} ({self.what}); get it from: {self.where}"
        if p.is_file() and p.stat().st_size == 0:
            return f"empty file {p} ({self.what}); re-download it from: {self.where}"
        return None


def check_source(root: os.PathLike | str, expected: Sequence[Expected], corpus: str) -> list[str]:
    """Problems with a raw corpus folder (empty list = complete).

    >>> import tempfile
    >>> check_source(tempfile.mkdtemp(), [Expected("a.csv", "labels", "the licence page")], "demo")[0][:7]
    'missing'
    """
    root = Path(root)
    if not root.is_dir():
        return [f"{corpus}: source folder {root} does not exist; unpack the corpus there "
                f"(see docs/paper.md) or point datasets.<domain>.src in params.yaml at it"]
    return [m for e in expected if (m := e.status(root)) is not None]


def require_source(root, expected, corpus: str) -> None:
    """Raise :class:`SourceError` listing every missing file of ``corpus``."""
    problems = check_source(root, expected, corpus)
    if problems:
        raise SourceError(f"{corpus} source at {root} is incomplete:\n  - " + "\n  - ".join(problems))


def stable_seed(*parts: Any) -> int:
    """A 63-bit seed from any values, identical in every process (unlike ``hash()``).

    >>> stable_seed(42, "track_01") != stable_seed(42, "track_02")
    True
    """
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") >> 1


def rng_for(*parts: Any) -> np.random.Generator:
    """``numpy.random.default_rng`` seeded with :func:`stable_seed` of ``parts``."""
    return np.random.default_rng(stable_seed(*parts))


def spoken_time(t: float) -> str:
    """A time as the queries say it, rounded to 30 s; :func:`harp_lib.core.timespan.localize` reads it.

    >>> spoken_time(170), spoken_time(60), spoken_time(10)
    ('around 3 minutes', 'around 1 minute', 'around 0 minutes')
    """
    half_minutes = int(round(max(0.0, float(t)) / 30.0))
    m, half = divmod(half_minutes, 2)
    if m == 0 and half:
        return "around 30 seconds"
    unit = "minute" if (m == 1 and not half) else "minutes"
    return f"around {m} and a half minutes" if half else f"around {m} {unit}"


def sha256_file(path: os.PathLike | str, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def params_from(cls, section: Optional[Mapping], **overrides):
    """Build a frozen params dataclass from a params.yaml section (unknown keys are an error)."""
    data = dict(section or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} for {cls.__name__} in params.yaml "
                         f"(known: {', '.join(sorted(known))})")
    return cls(**data)


def copy_recording(src: Path, dst: Path, sr: int, *, mode: str = "convert", window: float = 600.0) -> float:
    """Put a raw recording under the corpus folder; returns its duration in seconds.

    ``mode="convert"`` writes 16 kHz mono WAV (the contract), ``"link"`` hard-links the original
    (falls back to a copy across file systems) to save disk for hour-long podcasts.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    if mode == "link":
        if dst.exists():
            dst.unlink()
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
        return audio.probe(dst).duration
    if mode != "convert":
        raise ValueError(f"audio mode must be 'convert' or 'link', got {mode!r}")
    info = audio.probe(src)
    if dst.exists() and audio.probe(dst).sample_rate == sr and \
            abs(audio.probe(dst).duration - info.duration) < 0.05:
        return audio.probe(dst).duration        # already converted (re-runs are cheap)
    parts = [w for _, w in audio.iter_windows(src, window=window, sr=sr)]
    wave = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    audio.write(dst, wave, sr)
    return round(len(wave) / sr, 3)


def cut_clip(src: Path, span: Span, dst: Path, sr: int) -> None:
    """Write ``span`` of ``src`` as a 16 kHz mono WAV reference clip."""
    audio.write(dst, audio.read_window(src, span, sr), sr)


def write_corpus(out: Path, recordings: Iterable[Recording], segments: Iterable[Segment],
                 queries: Iterable[Query], info: Optional[Mapping] = None) -> dict:
    """Write one domain folder (sorted, atomic JSONL) and ``prepare.json``; returns counts."""
    recs = sorted(recordings, key=lambda r: r.id)
    segs = sorted(segments, key=lambda s: (s.recording_id, s.start, s.id))
    qs = sorted(queries, key=lambda q: q.query_id)
    ids = [q.query_id for q in qs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"{out}: duplicate query ids {dup[:5]}")
    write_jsonl(out / "recordings.jsonl", recs)
    write_jsonl(out / "segments.jsonl", segs)
    write_jsonl(out / "queries.jsonl", qs)
    counts = {"recordings": len(recs), "segments": len(segs), "queries": len(qs),
              "query_types": {t: sum(q.query_type == t for q in qs) for t in sorted({q.query_type for q in qs})},
              "audio_minutes": round(sum(r.duration for r in recs) / 60.0, 2)}
    write_text(out / "prepare.json", json.dumps({"counts": counts, **dict(info or {})}, indent=2,
                                                sort_keys=True, default=str) + "\n")
    return counts


def write_manifest(root: Path, profile: str = "paper", seed: int = 0) -> Path:
    """``<root>/manifest.json``: counts, audio minutes and sha256 of every file per domain."""
    root = Path(root)
    out: dict = {"profile": profile, "seed": seed, "domains": {}}
    for dom in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(f for f in dom.rglob("*") if f.is_file() and not f.name.endswith((".tmp", ".part")))
        prep = dom / "prepare.json"
        counts = json.loads(prep.read_text())["counts"] if prep.exists() else {}
        out["domains"][dom.name] = {"counts": counts,
                                    "sha256": {f.relative_to(dom).as_posix(): sha256_file(f) for f in files}}
    path = root / "manifest.json"
    write_text(path, json.dumps(out, indent=2, sort_keys=True) + "\n")
    return path


def stratified_pick(pool: Sequence, k: int, rng: np.random.Generator) -> list:
    """Pick ``k`` items from a score-sorted pool: split it into ``k`` equal buckets, one from each.

    Keeps easy and hard candidates in the benchmark instead of only the top of the ranking.

    >>> a, b, c = stratified_pick(list(range(9)), 3, np.random.default_rng(0))
    >>> a in (0, 1, 2), b in (3, 4, 5), c in (6, 7, 8)
    (True, True, True)
    """
    pool = list(pool)
    if k <= 0 or not pool:
        return []
    if len(pool) <= k:
        return pool
    edges = np.linspace(0, len(pool), k + 1)
    out = []
    for i in range(k):
        lo, hi = int(round(edges[i])), int(round(edges[i + 1]))
        if hi > lo:
            out.append(pool[int(rng.integers(lo, hi))])
    return out


#: Words the keyword topic extractor and quote picker skip.
STOPWORDS = frozenset("""a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself just know
like me more most my myself no nor not now of off on once only or other our ours ourselves out over own
really right same she should so some such than that the their theirs them themselves then there these they
thing things think this those through to too under until up uh um us very was we well were what when where
which while who whom why will with would yeah yes you your yours yourself yourselves going get got gonna
okay oh mean kind sort lot actually one two said say says go went much many even way back
talk talked talking today long while time""".split())


def words(text: str) -> list[str]:
    """Lower-case word tokens."""
    return re.findall(r"[a-z][a-z'\-]*", text.lower())
