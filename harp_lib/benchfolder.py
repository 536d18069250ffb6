"""The one check of a benchmark domain folder (``recordings.jsonl``, ``segments.jsonl``,
``queries.jsonl``, audio and reference clips), used by the generator
(:func:`harp_lib.synth.validate_domain`) and the corpus loader (:func:`harp_lib.datasets.load_corpus`).

Both read the folder with the schema readers and report every problem naming the file and id.
The generator also asks for what it guarantees (``generated=True``): 16 kHz mono audio of the
stated duration, segment ids ``{recording_id}_{NNNN}`` with source ``gt``, ``judge_info.type``,
and ground-truth segments for every query except a clinical "No".
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .schema import Query, Recording, Segment, read_jsonl, resolve_under

__all__ = ["SEGMENT_END_TOLERANCE_SEC", "AUDIO_DURATION_TOLERANCE_SEC", "DomainFolder", "check_domain_folder",
           "FOLDER_FILES"]

#: How far (s) a ground-truth segment may end after its recording's stated duration.  One value
#: for generated and prepared folders: corpus annotations are rounded and may overrun the audio
#: by a fraction of a second (every stage clips windows to the recording).
SEGMENT_END_TOLERANCE_SEC = 0.5
#: How far (s) a generated recording's probed duration may differ from ``recordings.jsonl``.
AUDIO_DURATION_TOLERANCE_SEC = 0.01
FOLDER_FILES = ("recordings.jsonl", "segments.jsonl", "queries.jsonl")


@dataclass(frozen=True)
class DomainFolder:
    """The records of one benchmark domain folder."""
    root: Path
    domain: str
    recordings: tuple[Recording, ...]
    segments: tuple[Segment, ...]
    queries: tuple[Query, ...]


def check_domain_folder(root, domain: Optional[str] = None, *, check_files: bool = True,
                        generated: bool = False) -> tuple[DomainFolder, list[str]]:
    """Read a domain folder and list its problems (empty: consistent).

    Missing jsonl files raise :class:`FileNotFoundError` (nothing can be checked without them).
    """
    root = Path(root)
    domain = domain or root.name
    for name in FOLDER_FILES:
        if not (root / name).exists():
            raise FileNotFoundError(f"{root / name} is missing")
    recs = read_jsonl(root / "recordings.jsonl", Recording)
    segs = read_jsonl(root / "segments.jsonl", Segment)
    qs = read_jsonl(root / "queries.jsonl", Query)
    problems: list[str] = []
    for what, ids in (("recording", [r.id for r in recs]), ("segment", [s.id for s in segs]),
                      ("query", [q.query_id for q in qs])):
        seen, dup = set(), set()
        for i in ids:
            (dup if i in seen else seen).add(i)
        if dup:
            problems.append(f"duplicate {what} ids {sorted(dup)[:5]}")
    rec_ids = {r.id: r for r in recs}
    seg_ids = {s.id: s for s in segs}
    for r in recs:
        if r.domain != domain:
            problems.append(f"recordings.jsonl: {r.id} has domain {r.domain!r}, expected {domain!r}")
        if check_files:
            try:
                p = resolve_under(root, r.audio_path)
            except ValueError as e:
                problems.append(f"recordings.jsonl: {r.id}: {e}")
                continue
            if not p.exists():
                problems.append(f"recordings.jsonl: audio of {r.id} missing ({r.audio_path})")
            elif generated:
                from . import audio
                info = audio.probe(p)
                if info.sample_rate != 16000 or info.channels != 1 or \
                        abs(info.duration - r.duration) > AUDIO_DURATION_TOLERANCE_SEC:
                    problems.append(f"{p}: expected 16 kHz mono of {r.duration} s, got {info}")
    for s in segs:
        if s.recording_id not in rec_ids:
            problems.append(f"segments.jsonl: {s.id} names unknown recording {s.recording_id!r}")
        elif s.end > rec_ids[s.recording_id].duration + SEGMENT_END_TOLERANCE_SEC:
            problems.append(f"segments.jsonl: {s.id} ends at {s.end} s, after its recording "
                            f"({rec_ids[s.recording_id].duration} s)")
        if generated and (not s.id.startswith(f"{s.recording_id}_") or s.source != "gt"):
            problems.append(f"segments.jsonl: segment {s.id} has a bad id or source {s.source!r} "
                            f"(expected {s.recording_id}_NNNN, 'gt')")
    for q in qs:
        if q.domain != domain:
            problems.append(f"queries.jsonl: {q.query_id} has domain {q.domain!r}, expected {domain!r}")
        if q.recording_id not in rec_ids:
            problems.append(f"queries.jsonl: {q.query_id} names unknown recording {q.recording_id!r}")
        for g in q.gt_segment_ids:
            if g not in seg_ids:
                problems.append(f"queries.jsonl: {q.query_id} names unknown GT segment {g!r}")
            elif seg_ids[g].recording_id != q.recording_id:
                problems.append(f"queries.jsonl: {q.query_id}: GT segment {g} is from another recording")
        for role, ref in q.references.items():
            try:
                if check_files and not resolve_under(root, ref).exists():
                    problems.append(f"queries.jsonl: {q.query_id}: reference {role} missing ({ref})")
            except ValueError as e:
                problems.append(f"queries.jsonl: {q.query_id}: {e}")
        if generated:
            if not q.ground_truth or not q.judge_info.get("type"):
                problems.append(f"queries.jsonl: {q.query_id}: missing ground truth or judge_info.type")
            if not q.gt_segment_ids and not (domain == "clinical" and q.ground_truth.get("answer") == "No"):
                problems.append(f"queries.jsonl: {q.query_id}: no gt_segment_ids")
    return DomainFolder(root, domain, tuple(recs), tuple(segs), tuple(qs)), problems
