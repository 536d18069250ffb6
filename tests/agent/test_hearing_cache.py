"""The on-disk hearing cache (``agent.hearing_cache``, harp_lib/retrieval/references.py) on a real recording.

A sweep over an answering parameter re-hears the same clips in a DVC experiment's temporary copy of
the data; the cache is keyed by content, so the copy hits, and anything that could change what a
backend hears (the window, the texts, the backend's options) misses.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harp_lib.retrieval import references
from harp_lib.retrieval.references import Hearing
from harp_lib.config import load_config
from harp_lib.extract.labelers import EmotionProsodyLabeler
from harp_lib.core.timespan import Span

SAMPLE = Path(__file__).resolve().parents[2] / ".cache/harp/pyannote_sample/sample.wav"
SPANS = [Span(0.0, 6.0), Span(6.0, 12.0), Span(14.0, 20.0)]
TEXTS = ["hello there", "how are you", "Texas is big"]

pytestmark = pytest.mark.skipif(not SAMPLE.exists(), reason="the pyannote sample call is fetched by scripts/bootstrap.sh")


def _hearing(cache: Path, **agent) -> Hearing:
    cfg = load_config(profile="ci", overrides={"agent": {"hearing_cache": str(cache), **agent}})
    return Hearing("emotion", cfg)


@pytest.fixture
def cold(tmp_path, monkeypatch):
    monkeypatch.setattr(references, "_CACHE", {})     # a fresh process: nothing heard yet
    return tmp_path / "heard"


def _forbid_backend(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the backend ran although the clip was heard before")
    monkeypatch.setattr(EmotionProsodyLabeler, "label_recording", boom)
    monkeypatch.setattr(EmotionProsodyLabeler, "label", boom)


def test_a_second_process_hears_a_copied_file_from_disk_without_the_backend(cold, tmp_path, monkeypatch):
    first = _hearing(cold).label_spans(SAMPLE, SPANS, TEXTS)
    assert first and all(d.get("primary") for d in first)
    assert len(list(cold.rglob("*.json"))) == 1
    copy = tmp_path / "exp_tmp" / "sample.wav"          # a DVC experiment's copy: other path and mtime
    copy.parent.mkdir()
    shutil.copyfile(SAMPLE, copy)
    monkeypatch.setattr(references, "_CACHE", {})
    _forbid_backend(monkeypatch)
    h = _hearing(cold)
    assert h.label_spans(copy, SPANS, TEXTS) == first
    assert (h.disk.hits, h.disk.misses) == (1, 0)


def test_what_changes_the_hearing_is_a_miss(cold, monkeypatch):
    h = _hearing(cold)
    base = h.label_spans(SAMPLE, SPANS, TEXTS)
    monkeypatch.setattr(references, "_CACHE", {})
    h = _hearing(cold)
    h.label_spans(SAMPLE, SPANS[:2], TEXTS[:2])                      # another set of windows
    h.label_spans(SAMPLE, SPANS, ["", "", ""])                       # other texts (lexical valence)
    assert h.disk.misses == 2 and h.disk.hits == 0
    monkeypatch.setattr(references, "_CACHE", {})
    h = _hearing(cold)
    assert h.label_spans(SAMPLE, SPANS, TEXTS) == base and h.disk.hits == 1


def test_a_changed_backend_source_digest_is_a_miss(cold, monkeypatch):
    _hearing(cold).label_spans(SAMPLE, SPANS, TEXTS)
    monkeypatch.setattr(references, "_CACHE", {})
    monkeypatch.setattr(references, "_SOURCE", ["edited harp_lib/extract"])
    h = _hearing(cold)
    h.label_spans(SAMPLE, SPANS, TEXTS)
    assert (h.disk.hits, h.disk.misses) == (0, 1)


def test_a_corrupt_entry_is_recomputed_and_a_read_only_cache_still_answers(cold, monkeypatch, caplog):
    first = _hearing(cold).label_spans(SAMPLE, SPANS, TEXTS)
    (entry,) = cold.rglob("*.json")
    entry.write_bytes(b"{not json")
    monkeypatch.setattr(references, "_CACHE", {})
    h = _hearing(cold)
    assert h.label_spans(SAMPLE, SPANS, TEXTS) == first and h.disk.misses == 1
    monkeypatch.setattr(references, "_CACHE", {})
    blocked = cold.parent / "blocked"
    blocked.write_text("a file where the cache folder should be")    # every write fails with an OSError
    assert _hearing(blocked).label_spans(SAMPLE, SPANS, TEXTS) == first
    assert "not written" in caplog.text


def test_null_turns_the_disk_cache_off(cold):
    cfg = load_config(profile="ci", overrides={"agent": {"hearing_cache": None}})
    assert Hearing("emotion", cfg).disk is None


def test_entries_are_json_and_a_planted_pickle_is_only_a_miss(cold, monkeypatch):
    """The cache folder is data, not code: entries are JSON whose stored key must match, and a
    pickle planted under an entry's name is never unpickled (issue: no unsafe loading)."""
    import json
    import pickle  # noqa: S403 - crafts the hostile file

    first = _hearing(cold).label_spans(SAMPLE, SPANS, TEXTS)
    (entry,) = cold.rglob("*.json")
    doc = json.loads(entry.read_text())
    assert set(doc) == {"key", "value"} and "spans" in doc["key"]

    class Boom:
        def __reduce__(self):
            return (AssertionError, ("a pickle in the cache was executed",))
    entry.write_bytes(pickle.dumps(Boom()))
    monkeypatch.setattr(references, "_CACHE", {})
    h = _hearing(cold)
    assert h.label_spans(SAMPLE, SPANS, TEXTS) == first
    assert (h.disk.hits, h.disk.misses) == (0, 1)
