"""Load a prepared corpus folder as records, checking that everything it names exists.

Works for any domain folder of the benchmark layout (built-in benchmark or ``harp prepare``
output), so downstream stages and notebooks read paper corpora exactly like the mini benchmark.

>>> # corpus = load_corpus("data/corpora/song"); corpus.queries[0].query_id
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..schema import Query, Recording, Segment, SchemaError, read_jsonl, resolve_under

__all__ = ["Corpus", "load_corpus", "CorpusError"]


class CorpusError(ValueError):
    """A prepared corpus is inconsistent (missing audio, unknown ids, duplicates)."""


@dataclass(frozen=True)
class Corpus:
    """The records of one prepared domain folder."""
    root: Path
    domain: str
    recordings: tuple[Recording, ...]
    segments: tuple[Segment, ...]
    queries: tuple[Query, ...]

    def audio_path(self, recording_id: str) -> Path:
        rec = next((r for r in self.recordings if r.id == recording_id), None)
        if rec is None:
            raise KeyError(f"{self.root}: no recording {recording_id!r}")
        return resolve_under(self.root, rec.audio_path)

    def segments_of(self, recording_id: str) -> list[Segment]:
        return [s for s in self.segments if s.recording_id == recording_id]

    def counts(self) -> dict:
        types = sorted({q.query_type for q in self.queries})
        return {"recordings": len(self.recordings), "segments": len(self.segments),
                "queries": len(self.queries), "query_types": {t: sum(q.query_type == t for q in self.queries)
                                                             for t in types}}


def load_corpus(root, domain: Optional[str] = None, *, check_files: bool = True) -> Corpus:
    """Read ``recordings.jsonl``, ``segments.jsonl`` and ``queries.jsonl`` of a domain folder.

    Raises :class:`CorpusError` naming the file and id when a query points at an unknown
    recording or ground-truth segment, a reference clip or recording file is missing, an id is
    duplicated, or a record belongs to another domain.
    """
    root = Path(root)
    domain = domain or root.name
    for name in ("recordings.jsonl", "segments.jsonl", "queries.jsonl"):
        if not (root / name).exists():
            raise CorpusError(f"{root / name} is missing; run `harp prepare {domain}` (or `harp synth`)")
    recs = read_jsonl(root / "recordings.jsonl", Recording)
    segs = read_jsonl(root / "segments.jsonl", Segment)
    qs = read_jsonl(root / "queries.jsonl", Query)
    problems = []
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
                if not resolve_under(root, r.audio_path).exists():
                    problems.append(f"recordings.jsonl: audio of {r.id} missing ({r.audio_path})")
            except ValueError as e:
                problems.append(f"recordings.jsonl: {r.id}: {e}")
    for s in segs:
        if s.recording_id not in rec_ids:
            problems.append(f"segments.jsonl: {s.id} names unknown recording {s.recording_id!r}")
        elif s.end > rec_ids[s.recording_id].duration + 0.5:
            problems.append(f"segments.jsonl: {s.id} ends at {s.end} s, after its recording "
                            f"({rec_ids[s.recording_id].duration} s)")
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
    if problems:
        raise CorpusError(f"{root}: {len(problems)} problem(s):\n  - " + "\n  - ".join(problems[:20]))
    return Corpus(root, domain, tuple(recs), tuple(segs), tuple(qs))
