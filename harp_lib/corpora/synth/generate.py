"""``generate()``: build the three domains, write them, validate them, write the manifest."""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from harp_lib.core import audio
from harp_lib.corpora.benchfolder import check_domain_folder
from harp_lib.core.atomic import write_text
from harp_lib.config import repo_root
from harp_lib.core.hashing import file_sha256
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import DOMAINS
from harp_lib.corpora.synth import clinical, emotion, song
from harp_lib.corpora.synth.core import CACHE_VERSION, DomainBuild, SynthCache, SynthError, load_params

__all__ = ["Manifest", "generate", "validate_domain", "GENERATOR_VERSION"]

GENERATOR_VERSION = "1"
_BUILDERS = {"emotion": emotion.build, "clinical": clinical.build, "song": song.build}


@dataclass(frozen=True)
class Manifest:
    """What was generated: written as ``manifest.json`` (deterministic: no timings)."""
    profile: str
    seed: int
    generator_version: str
    domains: tuple
    counts: dict
    audio_minutes: dict
    files: dict = field(default_factory=dict)    # relative path -> sha256

    def to_dict(self) -> dict:
        d = asdict(self)
        d["domains"] = list(self.domains)
        return d

    @classmethod
    def read(cls, path) -> "Manifest":
        d = json.loads(Path(path).read_text())
        d["domains"] = tuple(d["domains"])
        return cls(**d)


def validate_domain(folder: Path, domain: str) -> dict:
    """Read a domain folder back with the schema readers and check its references.

    The checks are :func:`harp_lib.corpora.benchfolder.check_domain_folder` with ``generated=True``
    (the same function the corpus loader uses): every recording file exists with the stated duration; GT segment ids are unique,
    ``{recording_id}_{NNNN}`` and inside their recording; every query has a unique id, a type
    of this domain, ground truth and judge info; its gt_segment_ids exist (and lie in its
    recording) and its reference clips exist.  Returns counts; raises :class:`SynthError`.
    """
    folder = Path(folder)
    try:
        got, problems = check_domain_folder(folder, domain, generated=True)
    except FileNotFoundError as e:
        raise SynthError(str(e)) from None
    if problems:
        raise SynthError(f"{folder}: " + "; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)"
                                                                    if len(problems) > 5 else ""))
    by_type: dict[str, int] = {}
    for q in got.queries:
        by_type[q.query_type] = by_type.get(q.query_type, 0) + 1
    return {"recordings": len(got.recordings), "segments": len(got.segments), "queries": dict(sorted(by_type.items())),
            "references": len(list((folder / "references").glob("*.wav"))) if (folder / "references").exists() else 0}


def _write_domain(folder: Path, b: DomainBuild) -> None:
    if folder.exists():
        # replaced only if it holds nothing but what `harp synth` writes (never someone's folder)
        foreign = [f for f in folder.rglob("*") if f.is_symlink() or (f.is_file() and f.suffix not in
                   (".wav", ".jsonl", ".json", ".part", ".tmp"))]
        if foreign:
            raise SynthError(f"{folder}: refusing to replace a folder holding {foreign[0]}, which "
                             f"`harp synth` does not write; move it away or choose another paths.benchmark")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for rel in sorted(b.audio):
        audio.write(folder / rel, b.audio[rel], 16000)
    write_jsonl(folder / "recordings.jsonl", b.recordings)
    write_jsonl(folder / "segments.jsonl", sorted(b.segments, key=lambda s: (s.recording_id, s.start, s.id)))
    write_jsonl(folder / "queries.jsonl", b.queries)


def generate(profile: str, seed: int, out, *, cache_dir=None, domains: Optional[Sequence[str]] = None,
             progress: bool = True, params: Optional[dict] = None) -> Manifest:
    """Generate the benchmark ``profile`` (ci | mini | full) with ``seed`` into ``out``.

    Writes ``out/<domain>/...`` for each domain (replacing earlier output of that domain),
    ``out/manifest.json`` and ``out/timings.json``.  Same profile + seed -> byte-identical
    files.  ``cache_dir`` holds rendered utterances and songs (default
    ``.cache/harp/synth`` under the repository root); ``domains`` restricts the build.

    Usage (writes audio; tests/synth/test_generate.py checks it)::

        m = generate("ci", 0, Path(tempfile.mkdtemp()), domains=["clinical"], progress=False)
        m.counts["clinical"]["queries"]     # {'exhibited': 3, 'reported': 3}
    """
    t_start = time.perf_counter()
    p = load_params(profile, overrides=params)
    out = Path(out)
    doms = list(domains) if domains else list(DOMAINS)
    bad = [d for d in doms if d not in DOMAINS]
    if bad:
        raise SynthError(f"unknown domain(s) {bad}; choose from {DOMAINS}")
    if cache_dir is None:
        cache_dir = repo_root() / p["cache_dir"]
    cache = SynthCache(cache_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts, minutes, files, timings = {}, {}, {}, {}
    for d in doms:
        t0 = time.perf_counter()
        b = _BUILDERS[d](int(seed), p, cache, progress=progress)
        _write_domain(out / d, b)
        counts[d] = validate_domain(out / d, d)
        minutes[d] = round(sum(r.duration for r in b.recordings) / 60, 3)
        timings[d] = round(time.perf_counter() - t0, 2)
        for f in sorted((out / d).rglob("*")):
            if f.is_file():
                files[f.relative_to(out).as_posix()] = file_sha256(f)
    minutes["total"] = round(sum(minutes[d] for d in doms), 3)
    man = Manifest(profile=profile, seed=int(seed), generator_version=f"{GENERATOR_VERSION}.{CACHE_VERSION}",
                   domains=tuple(doms), counts=counts, audio_minutes=minutes, files=dict(sorted(files.items())))
    write_text(out / "manifest.json", json.dumps(man.to_dict(), indent=1, sort_keys=True) + "\n")
    total = round(time.perf_counter() - t_start, 2)
    write_text(out / "timings.json", json.dumps(
        {"profile": profile, "seed": int(seed), "seconds": {**timings, "total": total},
         "audio_minutes": minutes, "cache": {"dir": str(cache_dir), "hits": cache.hits, "misses": cache.misses}},
        indent=1, sort_keys=True) + "\n")
    return man
