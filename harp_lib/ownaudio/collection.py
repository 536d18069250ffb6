"""User collections: the folders your own recordings live in, their ids, and finding one.

A *user collection* lives under ``paths.data`` (never under ``results/`` and apart from the
benchmark); ``harp ingest`` (:mod:`harp_lib.ownaudio.ingest`) fills it and ``harp ask``
(:mod:`harp_lib.ownaudio.ask`) answers from it.  Layout::

    <paths.data>/user/<collection>/
        <domain>/recordings.jsonl   <domain>/audio/<id>.wav   <domain>/refs/<sha>.wav
        extract/<domain>/...        index/<domain>/...        answers/<key>.json

This module holds that layout (:class:`UserCollection`), the collections themselves, a recording's
safe id from its file name, the ``--domain`` words, finding an ingested recording, a question made
printable, and the extraction state an answer reads (part of the answer-cache key).

>>> safe_id("My Call (final) #2.MP3")
'My_Call_final_2'
>>> unique_id("call", {"call", "call_2"})
'call_3'
>>> resolve_domain("speech")
'emotion'
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from harp_lib.config import Config, load_config
from harp_lib.core.hashing import file_sha256
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.paths import DataPaths, ExtractPaths, IdError
from harp_lib.core.record import SchemaError
from harp_lib.core.schema import DOMAINS, Recording
from harp_lib.core.errors import HarpError

__all__ = ["DOMAIN_ALIASES", "UserDataError", "UserCollection", "safe_id", "unique_id", "resolve_domain",
           "collection", "collections", "find_recording"]

#: ``--domain`` words -> the package's pipeline domain (``harp_lib.core.schema.DOMAINS``).
DOMAIN_ALIASES: dict[str, str] = {"speech": "emotion", "emotion": "emotion", "podcast": "emotion",
                                  "clinical": "clinical", "song": "song", "music": "song"}
_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


class UserDataError(HarpError, ValueError):
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
    return load_config()


def collection(cfg: Optional[Config] = None, name: str = "default") -> UserCollection:
    """The user collection ``name`` (a safe name) under ``<paths.data>/user/``.

    Refuses a data root inside ``paths.results`` (user runs never write into ``results/``).
    """
    cfg = _cfg(cfg)
    if not name or _SAFE.search(name) or name.strip("_-") != name:
        raise UserDataError(f"collection name {name!r}: use letters, digits, '_' and '-' only")
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


# ----------------------------------------------------------------------------- what an answer reads
def _extraction_state(col: UserCollection, rec: Recording) -> dict:
    """sha256 of what an answer about ``rec`` reads: its extracted segments (times, speakers,
    transcript, labels), its vectors, the embedding backends (``spaces.json``) and the index's
    segment list.  Part of the answer-cache key, so a re-extraction (a re-ingest of changed audio,
    other backends) is never answered from the cache of the old one.  A recording without
    extracted segments is an error, not an empty answer."""
    xp, ext = ExtractPaths(col.extract_dir(rec.domain)), col.extract_dir(rec.domain)
    seg = xp.segments(rec.id)
    if not seg.is_file():
        raise UserDataError(f"recording {rec.id!r} has no extracted segments ({seg}); run `harp ingest "
                            f"{rec.custom.get('source', '<file>')} --domain {rec.custom.get('domain_word', rec.domain)}` "
                            f"again")
    files = [seg, ext / "spaces.json", col.index_dir(rec.domain) / "segments.jsonl",
             *sorted((ext / "vectors").glob(f"{rec.id}.*.npy"))]
    return {p.name: (file_sha256(p) if p.is_file() else None) for p in files}
