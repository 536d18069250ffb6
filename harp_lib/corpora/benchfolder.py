"""The one check of a benchmark domain folder (``recordings.jsonl``, ``segments.jsonl``,
``queries.jsonl``, audio and reference clips), used by the generator
(:func:`harp_lib.corpora.synth.validate_domain`) and the corpus loader (:func:`harp_lib.corpora.datasets.load_corpus`).

Both read the folder with the schema readers and report every problem naming the file and id.
The generator also asks for what it guarantees (``generated=True``): 16 kHz mono audio of the
stated duration, segment ids ``{recording_id}_{NNNN}`` with source ``gt``, ``judge_info.type``,
and ground-truth segments for every query except a clinical "No".
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harp_lib.core import audio
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Query, Recording, Segment, resolve_under

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
    The problems come rule by rule within each record, records in file order: unique ids, then
    each recording, each segment, each query.
    """
    folder = _read_folder(Path(root), domain)
    rec_ids = {r.id: r for r in folder.recordings}
    seg_ids = {s.id: s for s in folder.segments}
    problems = _duplicate_ids(folder)
    for r in folder.recordings:
        problems += _recording_problems(folder, r, check_files, generated)
    for s in folder.segments:
        problems += _segment_problems(s, rec_ids, generated)
    for q in folder.queries:
        problems += _query_problems(folder, q, rec_ids, seg_ids, check_files, generated)
    return folder, problems


def _read_folder(root: Path, domain: Optional[str]) -> DomainFolder:
    """The three manifests, read strictly (a missing one raises :class:`FileNotFoundError`)."""
    for name in FOLDER_FILES:
        if not (root / name).exists():
            raise FileNotFoundError(f"{root / name} is missing")
    return DomainFolder(root, domain or root.name,
                        tuple(read_jsonl(root / "recordings.jsonl", Recording)),
                        tuple(read_jsonl(root / "segments.jsonl", Segment)),
                        tuple(read_jsonl(root / "queries.jsonl", Query)))


def _duplicate_ids(folder: DomainFolder) -> list[str]:
    """Rule: recording, segment and query ids are unique."""
    problems = []
    for what, ids in (("recording", [r.id for r in folder.recordings]), ("segment", [s.id for s in folder.segments]),
                      ("query", [q.query_id for q in folder.queries])):
        seen, dup = set(), set()
        for i in ids:
            (dup if i in seen else seen).add(i)
        if dup:
            problems.append(f"duplicate {what} ids {sorted(dup)[:5]}")
    return problems


def _recording_problems(folder: DomainFolder, r: Recording, check_files: bool, generated: bool) -> list[str]:
    """Rules: the folder's domain; the audio under the folder and present; generated audio is
    16 kHz mono of the stated duration."""
    problems = []
    if r.domain != folder.domain:
        problems.append(f"recordings.jsonl: {r.id} has domain {r.domain!r}, expected {folder.domain!r}")
    if not check_files:
        return problems
    try:
        p = resolve_under(folder.root, r.audio_path)
    except ValueError as e:
        return problems + [f"recordings.jsonl: {r.id}: {e}"]
    if not p.exists():
        problems.append(f"recordings.jsonl: audio of {r.id} missing ({r.audio_path})")
    elif generated:
        problems += _generated_audio_problems(p, r)
    return problems


def _generated_audio_problems(p: Path, r: Recording) -> list[str]:
    """Rule (generated folders): the audio is 16 kHz mono of the duration ``recordings.jsonl`` states."""
    info = audio.probe(p)
    if info.sample_rate != 16000 or info.channels != 1 or \
            abs(info.duration - r.duration) > AUDIO_DURATION_TOLERANCE_SEC:
        return [f"{p}: expected 16 kHz mono of {r.duration} s, got {info}"]
    return []


def _segment_problems(s: Segment, rec_ids: dict[str, Recording], generated: bool) -> list[str]:
    """Rules: a known recording, ending within :data:`SEGMENT_END_TOLERANCE_SEC` of it; generated
    segments are named ``{recording_id}_NNNN`` with source ``gt``."""
    problems = []
    if s.recording_id not in rec_ids:
        problems.append(f"segments.jsonl: {s.id} names unknown recording {s.recording_id!r}")
    elif s.end > rec_ids[s.recording_id].duration + SEGMENT_END_TOLERANCE_SEC:
        problems.append(f"segments.jsonl: {s.id} ends at {s.end} s, after its recording "
                        f"({rec_ids[s.recording_id].duration} s)")
    if generated and (not s.id.startswith(f"{s.recording_id}_") or s.source != "gt"):
        problems.append(f"segments.jsonl: segment {s.id} has a bad id or source {s.source!r} "
                        f"(expected {s.recording_id}_NNNN, 'gt')")
    return problems


def _query_problems(folder: DomainFolder, q: Query, rec_ids: dict[str, Recording], seg_ids: dict[str, Segment],
                    check_files: bool, generated: bool) -> list[str]:
    """Rules: the folder's domain, a known recording, its GT segments, its reference clips, and
    (generated) what the generator guarantees."""
    problems = []
    if q.domain != folder.domain:
        problems.append(f"queries.jsonl: {q.query_id} has domain {q.domain!r}, expected {folder.domain!r}")
    if q.recording_id not in rec_ids:
        problems.append(f"queries.jsonl: {q.query_id} names unknown recording {q.recording_id!r}")
    problems += _gt_segment_problems(q, seg_ids)
    problems += _reference_problems(folder.root, q, check_files)
    if generated:
        problems += _generated_query_problems(q, folder.domain)
    return problems


def _gt_segment_problems(q: Query, seg_ids: dict[str, Segment]) -> list[str]:
    """Rule: every GT segment named exists and is from the query's recording."""
    problems = []
    for g in q.gt_segment_ids:
        if g not in seg_ids:
            problems.append(f"queries.jsonl: {q.query_id} names unknown GT segment {g!r}")
        elif seg_ids[g].recording_id != q.recording_id:
            problems.append(f"queries.jsonl: {q.query_id}: GT segment {g} is from another recording")
    return problems


def _reference_problems(root: Path, q: Query, check_files: bool) -> list[str]:
    """Rule: each reference clip lies under the folder (checked always) and exists (``check_files``)."""
    problems = []
    for role, ref in q.references.items():
        try:
            if check_files and not resolve_under(root, ref).exists():
                problems.append(f"queries.jsonl: {q.query_id}: reference {role} missing ({ref})")
        except ValueError as e:
            problems.append(f"queries.jsonl: {q.query_id}: {e}")
    return problems


def _generated_query_problems(q: Query, domain: str) -> list[str]:
    """Rule (generated folders): ground truth with a ``judge_info.type``, and GT segments for every
    query except a clinical "No"."""
    problems = []
    if not q.ground_truth or not q.judge_info.get("type"):
        problems.append(f"queries.jsonl: {q.query_id}: missing ground truth or judge_info.type")
    if not q.gt_segment_ids and not (domain == "clinical" and q.ground_truth.get("answer") == "No"):
        problems.append(f"queries.jsonl: {q.query_id}: no gt_segment_ids")
    return problems
