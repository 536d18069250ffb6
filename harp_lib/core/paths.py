"""Ids and every data path, in one place.

Recording, query and collection ids (and domain, setup and judge names) become parts of file
names, so they follow ONE rule (:func:`check_id`): ``[A-Za-z0-9][A-Za-z0-9._-]*``, at most
:data:`MAX_ID_LEN` characters, no ``..``.  Manifests are checked when they are read
(``harp_lib.core.schema``), and :class:`DataPaths` / :class:`ExtractPaths` -- the only builders of
data paths -- check again and assert that every path they return stays under its root, so an id
can never name a file outside the data folders.

Layout (``params.yaml`` ``paths:``)::

    <benchmark>/<domain>/{recordings,queries,segments}.jsonl
    <extract>/<domain>/stage1/<rec>/, segments/<rec>.jsonl, vectors/<rec>.<space>.npy,
                       quarantine/<rec>.json, quarantine.jsonl, spaces.json
    <index>/<domain>/
    <predictions>/<domain>/<setup>.jsonl
    <judgements>/<domain>/<setup>.<judge>.jsonl
    <scores>/<domain>/<setup>.<judge>.jsonl
    <folder>/../.locks/<folder name>.<stage>.lock     (outside DVC-tracked outputs)

>>> check_id("consult_001")
'consult_001'
>>> check_id("../etc")
Traceback (most recent call last):
...
harp_lib.core.paths.IdError: id '../etc' is not a safe id: use letters, digits, '.', '_' and '-', starting with a letter or digit, no '..', at most 128 characters
>>> ExtractPaths("/data/extract/clinical").vectors("consult_001", "audio").as_posix()
'/data/extract/clinical/vectors/consult_001.audio.npy'
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from harp_lib.core.errors import HarpError

__all__ = ["IdError", "MAX_ID_LEN", "check_id", "is_id", "under", "DataPaths", "ExtractPaths"]

MAX_ID_LEN = 128
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class IdError(HarpError, ValueError):
    """An id (or domain / setup / judge name) that may not be used as part of a file name."""


def is_id(value) -> bool:
    """True when ``value`` follows the id rule (see :func:`check_id`)."""
    return (isinstance(value, str) and 0 < len(value) <= MAX_ID_LEN and ".." not in value
            and _ID_RE.match(value) is not None)


def check_id(value, what: str = "id") -> str:
    """Return ``value`` if it is a safe id, else raise :class:`IdError` naming it."""
    if not is_id(value):
        raise IdError(f"{what} {value!r} is not a safe id: use letters, digits, '.', '_' and '-', "
                      f"starting with a letter or digit, no '..', at most {MAX_ID_LEN} characters")
    return value


def under(root: os.PathLike | str, *parts: str) -> Path:
    """``root / parts`` after asserting the result stays inside ``root`` (symlinks resolved).

    >>> under("/data", "a", "b.json").as_posix()
    '/data/a/b.json'
    >>> under("/data", "../x")
    Traceback (most recent call last):
    ...
    harp_lib.core.paths.IdError: path '/data/../x' leaves its data folder /data
    """
    root = Path(root)
    p = root.joinpath(*parts)
    r = root.resolve()
    q = p.resolve()
    if q != r and r not in q.parents:
        raise IdError(f"path '{p.as_posix()}' leaves its data folder {root.as_posix()}")
    return p


class ExtractPaths:
    """Paths of one domain's extraction folder (``<paths.extract>/<domain>``)."""

    def __init__(self, root: os.PathLike | str):
        self.root = Path(root)

    def stage1(self, rec_id: str) -> Path:
        """The stage-1 cache folder of a recording."""
        return under(self.root, "stage1", check_id(rec_id, "recording id"))

    def segments(self, rec_id: str) -> Path:
        return under(self.root, "segments", f"{check_id(rec_id, 'recording id')}.jsonl")

    def vectors(self, rec_id: str, space: str) -> Path:
        return under(self.root, "vectors", f"{check_id(rec_id, 'recording id')}.{check_id(space, 'space')}.npy")

    def quarantine(self, rec_id: str) -> Path:
        return under(self.root, "quarantine", f"{check_id(rec_id, 'recording id')}.json")

    @property
    def quarantine_summary(self) -> Path:
        return self.root / "quarantine.jsonl"

    @property
    def spaces(self) -> Path:
        return self.root / "spaces.json"

    @property
    def segments_dir(self) -> Path:
        return self.root / "segments"

    @property
    def vectors_dir(self) -> Path:
        return self.root / "vectors"


class DataPaths:
    """Every data path of a configuration (``params.yaml`` ``paths:``), built from checked names.

    >>> from harp_lib.config import load_config
    >>> p = DataPaths(load_config())
    >>> p.judgements("emotion", "A5", "rule").as_posix().endswith("data/judgements/emotion/A5.rule.jsonl")
    True
    """

    def __init__(self, cfg):
        self.cfg = cfg

    def _root(self, key: str) -> Path:
        if key == "scores" and not self.cfg.paths.scores:
            return self.cfg.path("paths.data") / "scores"
        return self.cfg.path(f"paths.{key}")

    def _domain(self, key: str, domain: str) -> Path:
        return under(self._root(key), check_id(domain, "domain"))

    # -- benchmark
    def benchmark(self, domain: str) -> Path:
        return self._domain("benchmark", domain)

    def recordings_manifest(self, domain: str) -> Path:
        return self.benchmark(domain) / "recordings.jsonl"

    def queries_manifest(self, domain: str) -> Path:
        return self.benchmark(domain) / "queries.jsonl"

    def segments_manifest(self, domain: str) -> Path:
        return self.benchmark(domain) / "segments.jsonl"

    # -- stages
    def extract_dir(self, domain: str) -> Path:
        return self._domain("extract", domain)

    def extract(self, domain: str) -> ExtractPaths:
        return ExtractPaths(self.extract_dir(domain))

    def index(self, domain: str) -> Path:
        return self._domain("index", domain)

    def predictions(self, domain: str, setup: str) -> Path:
        return under(self._domain("predictions", domain), f"{check_id(setup, 'setup')}.jsonl")

    def judgements(self, domain: str, setup: str, judge: str) -> Path:
        return under(self._domain("judgements", domain),
                     f"{check_id(setup, 'setup')}.{check_id(judge, 'judge')}.jsonl")

    def user_collection(self, name: str) -> Path:
        """``<paths.data>/user/<name>`` (``harp ingest``); never inside ``paths.results``."""
        root = under(self._root("data") / "user", check_id(name, "collection")).resolve()
        results = self._root("results").resolve()
        if root == results or results in root.parents:
            raise IdError(f"paths.data ({self._root('data')}) lies inside paths.results ({results}); user "
                          f"collections are never written under results/: point paths.data elsewhere")
        return root

    def scores_dir(self, domain: str) -> Path:
        return self._domain("scores", domain)

    def scores(self, domain: str, setup: str, judge: str) -> Path:
        return under(self._domain("scores", domain),
                     f"{check_id(setup, 'setup')}.{check_id(judge, 'judge')}.jsonl")

    def results(self, *parts: str) -> Path:
        return under(self._root("results"), *parts)

    def timings(self, *parts: str) -> Path:
        """Machine-dependent timings: ``<paths.data>/timings/...`` (never a DVC out or dep)."""
        return under(self._root("data"), "timings", *parts)

    def sweeps(self, name: str) -> Path:
        """Scratch folder of a parameter sweep: ``<paths.data>/sweeps/<name>``."""
        return under(self._root("data"), "sweeps", check_id(name, "sweep name"))

    def benchmark_root(self) -> Path:
        return self._root("benchmark")

    @staticmethod
    def lock(folder: os.PathLike | str, stage: str) -> Path:
        """The lock file guarding ``folder`` for ``stage``: ``<parent>/.locks/<name>.<stage>.lock``
        (beside the folder, so DVC-tracked outputs never contain it)."""
        folder = Path(folder)
        return under(folder.parent, ".locks", f"{folder.name}.{check_id(stage, 'stage')}.lock")

