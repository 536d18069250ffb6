"""Load a prepared corpus folder as records, checking that everything it names exists.

Works for any domain folder of the benchmark layout (built-in benchmark or ``harp prepare``
output), so downstream stages and notebooks read paper corpora exactly like the mini benchmark.

>>> # corpus = load_corpus("data/corpora/song"); corpus.queries[0].query_id
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harp_lib.corpora.benchfolder import FOLDER_FILES, check_domain_folder
from harp_lib.core.schema import Query, Recording, Segment, resolve_under
from harp_lib.core.segments import SegmentSet
from harp_lib.core.errors import HarpError

__all__ = ["Corpus", "load_corpus", "CorpusError"]


class CorpusError(HarpError, ValueError):
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
        return SegmentSet(self.segments).of(recording_id)

    def counts(self) -> dict:
        types = sorted({q.query_type for q in self.queries})
        return {"recordings": len(self.recordings), "segments": len(self.segments),
                "queries": len(self.queries), "query_types": {t: sum(q.query_type == t for q in self.queries)
                                                             for t in types}}


def load_corpus(root, domain: Optional[str] = None, *, check_files: bool = True) -> Corpus:
    """Read ``recordings.jsonl``, ``segments.jsonl`` and ``queries.jsonl`` of a domain folder.

    Raises :class:`CorpusError` naming the file and id when a query points at an unknown
    recording or ground-truth segment, a reference clip or recording file is missing, an id is
    duplicated, or a record belongs to another domain (:func:`harp_lib.corpora.benchfolder.check_domain_folder`,
    the check the generator uses too).
    """
    root = Path(root)
    domain = domain or root.name
    for name in FOLDER_FILES:
        if not (root / name).exists():
            raise CorpusError(f"{root / name} is missing; run `harp prepare {domain}` (or `harp synth`)")
    got, problems = check_domain_folder(root, domain, check_files=check_files)
    if problems:
        raise CorpusError(f"{root}: {len(problems)} problem(s):\n  - " + "\n  - ".join(problems[:20]))
    return Corpus(root, domain, got.recordings, got.segments, got.queries)
