import json

import numpy as np
import pytest

from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.index_errors import IndexError_
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Segment
from harp_lib.core.timespan import Span


def _fake_extract(root, n_recs=3, n_segs=40, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(5, dim))
    (root / "segments").mkdir(parents=True)
    (root / "vectors").mkdir()
    (root / "spaces.json").write_text(json.dumps({"text": {"backend": "t", "model": "m", "dim": dim},
                                                  "audio": {"backend": "a", "model": "m2", "dim": 4}}))
    for r in range(n_recs):
        rec = f"rec{r}"
        segs, t = [], 0.0
        for i in range(n_segs):
            d = float(rng.uniform(2, 12))
            segs.append(Segment(f"{rec}_ext_{i:04d}", rec, t, t + d, f"SPEAKER_{i % 2:02d}",
                                f"word{i} common topic{i % 3}", {"primary": ["Happy", "Sad"][i % 2],
                                                                 "scores": {"Happy": 0.6, "Sad": 0.4}}))
            t += d + float(rng.uniform(0, 1))
        # write shuffled to check ordering is restored
        perm = rng.permutation(n_segs)
        write_jsonl(root / "segments" / f"{rec}.jsonl", [segs[i] for i in perm])
        text = centers[rng.integers(0, 5, n_segs)] + 0.1 * rng.normal(size=(n_segs, dim))
        np.save(root / "vectors" / f"{rec}.text.npy", text[perm].astype(np.float32))
        np.save(root / "vectors" / f"{rec}.audio.npy", rng.normal(size=(n_segs, 4)).astype(np.float32)[perm])
    return root


def test_vector_search_matches_brute_force(tmp_path):
    ex = _fake_extract(tmp_path / "ex")
    ix = SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    loaded = SegmentIndex.load(tmp_path / "ix")
    rng = np.random.default_rng(1)
    for trial in range(20):
        rec = f"rec{trial % 3}"
        w = Span(float(rng.uniform(0, 100)), float(rng.uniform(150, 400)))
        q = rng.normal(size=16)
        segs = [s for s in ix.segments(rec) if s.end > w.start and s.start < w.end]
        mat = np.stack([ix.vector("text", s.id) for s in segs])
        sims = mat @ (q / np.linalg.norm(q))
        expect = [segs[i].id for i in np.argsort(-sims)[:5]]
        for index in (ix, loaded):
            got = index.search_vector("text", rec, w, q, k=5)
            assert [g[0] for g in got] == expect
            assert got[0][1] == pytest.approx(float(sims.max()), abs=1e-4)


def test_filters_by_recording_and_window(tmp_path):
    ix = SegmentIndex.build(_fake_extract(tmp_path / "ex"), None, progress=False)
    w = Span(20, 60)
    hits = ix.search_time("rec1", w)
    ids = {h[0] for h in hits}
    expect = {s.id for s in ix.segments("rec1") if s.end > 20 and s.start < 60}
    assert ids == expect and all(i.startswith("rec1_") for i in ids)
    assert all(0 < sc <= 1 for _, sc in hits)
    assert ix.search_vector("text", "nope", w, np.ones(16)) == []
    assert ix.segments("nope") == []


def test_keyword_and_label(tmp_path):
    ix = SegmentIndex.build(_fake_extract(tmp_path / "ex"), None, progress=False)
    full = Span(0, 1e6)
    hits = ix.search_keyword("rec0", full, "Word7")
    assert hits == [("rec0_ext_0007", 1.0)]
    assert len(ix.search_keyword("rec0", full, "common", k=10)) == 10
    # partial phrase match: 2 of 3 content words
    part = ix.search_keyword("rec0", full, "word3 topic0 banana")
    assert ("rec0_ext_0003", pytest.approx(0.667, abs=1e-3)) in [(i, s) for i, s in part]
    labs = ix.search_label("rec2", full, "happy")
    assert labs and all(ix.segment(i).labels["primary"] == "Happy" and s == 0.6 for i, s in labs)


def test_rebuild_is_idempotent_and_stale_detected(tmp_path):
    ex = _fake_extract(tmp_path / "ex")
    SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    first = {p.name: p.read_bytes() for p in (tmp_path / "ix").iterdir()}
    SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    second = {p.name: p.read_bytes() for p in (tmp_path / "ix").iterdir()}
    assert first == second
    assert len(SegmentIndex.load(tmp_path / "ix")) == 120  # no duplicated rows
    # a vectors file with the wrong number of rows is refused with its name
    np.save(ex / "vectors" / "rec1.text.npy", np.zeros((3, 16), np.float32))
    with pytest.raises(IndexError_, match="rec1.text.npy"):
        SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    # the previous index survives the failed build
    assert len(SegmentIndex.load(tmp_path / "ix")) == 120


def test_missing_index_is_clear(tmp_path):
    with pytest.raises(IndexError_, match="harp index"):
        SegmentIndex.load(tmp_path)
    with pytest.raises(IndexError_, match="harp extract"):
        SegmentIndex.build(tmp_path, None)


def test_large_candidate_sets_use_faiss_selector(tmp_path, monkeypatch):
    import harp_lib.retrieval.index_vector as m
    ex = _fake_extract(tmp_path / "ex")
    SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    ix = SegmentIndex.load(tmp_path / "ix")
    q = np.arange(16, dtype=np.float32)
    brute = ix.search_vector("text", "rec0", Span(0, 1e5), q, k=5)
    monkeypatch.setattr(m, "_BRUTE_FORCE_MAX", 1)
    assert [h[0] for h in ix.search_vector("text", "rec0", Span(0, 1e5), q, k=5)] == [h[0] for h in brute]


def _tied_extract(root, n=12, dim=8):
    """One recording whose segment ids run against time (id z.. first) and whose vectors take
    only two values, so most scores are exactly tied."""
    (root / "segments").mkdir(parents=True)
    (root / "vectors").mkdir()
    (root / "spaces.json").write_text(json.dumps({"text": {"backend": "t", "model": "m", "dim": dim}}))
    segs = [Segment(f"seg_{chr(ord('z') - i)}", "rec", 3.0 * i, 3.0 * i + 2, "SPEAKER_00", "a tied cough",
                    {"primary": "Happy"}) for i in range(n)]
    write_jsonl(root / "segments" / "rec.jsonl", segs)
    vec = np.zeros((n, dim), np.float32)
    vec[:, 0] = 1.0
    vec[::3, 1] = 1.0                                  # rows 0, 3, 6, 9: a second, also tied, score
    np.save(root / "vectors" / "rec.text.npy", vec)
    return root


@pytest.mark.parametrize("brute_max", [50_000, 1])
def test_tied_scores_come_out_in_segment_id_order(tmp_path, monkeypatch, brute_max):
    import harp_lib.retrieval.index_vector as m
    monkeypatch.setattr(m, "_BRUTE_FORCE_MAX", brute_max)    # 1: the FAISS candidate path
    ix = SegmentIndex.build(_tied_extract(tmp_path / "ex"), tmp_path / "ix", progress=False)
    ix = SegmentIndex.load(tmp_path / "ix")
    q = np.eye(8, dtype=np.float32)[0]                       # every segment scores exactly 1/sqrt(1) or 1/sqrt(2)
    hits = ix.search_vector("text", "rec", Span(0, 1e5), q, k=5)
    ones = sorted(s.id for i, s in enumerate(ix.segments("rec")) if i % 3)
    assert [h[0] for h in hits] == ones[:5] and {h[1] for h in hits} == {1.0}
    hits = ix.search_vector("text", "rec", Span(0, 1e5), np.eye(8, dtype=np.float32)[1], k=3)
    assert [h[0] for h in hits] == sorted(s.id for i, s in enumerate(ix.segments("rec")) if i % 3 == 0)[:3]
    # equal keyword and label scores: time order, then id (here time order is the reverse of id order)
    kw = ix.search_keyword("rec", Span(0, 1e5), "tied cough", k=4)
    assert [h[0] for h in kw] == [s.id for s in ix.segments("rec")][:4]


# -- format 2: the memory-mapped index (issue 30) ------------------------------------------------
def _all_hits(ix, recs, rng_seed=3):
    """Every search tool over many windows and queries, as exact bytes (ids and float reprs)."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for trial in range(30):
        rec = recs[trial % len(recs)]
        w = Span(0, 1e6) if trial % 5 == 0 else Span(float(rng.uniform(0, 200)), float(rng.uniform(200, 500)))
        out.append(ix.search_time(rec, w))
        out.append(ix.search_keyword(rec, w, f"word{trial} common topic{trial % 3}", k=7))
        out.append(ix.search_label(rec, w, ["happy", "SAD ", "neutral"][trial % 3]))
        for space, d in (("text", 16), ("audio", 4)):
            out.append(ix.search_vector(space, rec, w, rng.normal(size=d), k=5))
    return repr(out).encode()


@pytest.mark.parametrize("brute_max", [50_000, 1])
def test_memory_mapped_index_gives_the_same_bytes_as_the_in_memory_one(tmp_path, monkeypatch, brute_max):
    import harp_lib.retrieval.index_vector as m
    monkeypatch.setattr(m, "_BRUTE_FORCE_MAX", brute_max)   # 1: the FAISS selector path on the mmap index
    built = SegmentIndex.build(_fake_extract(tmp_path / "ex"), tmp_path / "ix", progress=False)
    mm = SegmentIndex.load(tmp_path / "ix")
    mem = SegmentIndex.load(tmp_path / "ix", mmap=False)
    assert mm.memory_mapped and not mem.memory_mapped and not built.memory_mapped
    v = mm._vecs["text"]
    assert isinstance(v.base, np.memmap) and not v.flags.writeable and not v.flags.owndata
    recs = ["rec0", "rec1", "rec2", "nope"]
    assert _all_hits(mm, recs) == _all_hits(mem, recs) == _all_hits(built, recs)
    assert b"Happy" not in _all_hits(mm, recs) and len(_all_hits(mm, recs)) > 5000
    for rec in recs:
        assert mm.segments(rec) == mem.segments(rec)
    for s in mem.segments("rec1")[::7]:
        assert mm.segment(s.id) == s
        assert mm.vector("text", s.id).tobytes() == mem.vector("text", s.id).tobytes()
    with pytest.raises(KeyError, match="unknown segment id 'rec1_ext_9999'"):
        mm.segment("rec1_ext_9999")
    # only the recordings asked for are parsed, and no more than the cache holds
    assert set(mm._seg_cache) <= {"rec0", "rec1", "rec2"}
    # saving a memory-mapped index writes the same bytes
    mm.save(tmp_path / "ix2")
    assert {p.name: p.read_bytes() for p in (tmp_path / "ix").iterdir()} == \
           {p.name: p.read_bytes() for p in (tmp_path / "ix2").iterdir()}


def test_format_1_index_is_read_as_before_and_newer_formats_are_refused(tmp_path):
    ex = _fake_extract(tmp_path / "ex")
    ix2 = SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    # a format-1 folder as the previous harp_lib wrote it: no rows.json / rows_*.npy, ids in <space>.json
    ids = [s.id for rec in ix2.recording_ids() for s in ix2.segments(rec)]
    for p in (tmp_path / "ix").glob("rows*"):
        p.unlink()
    for space in ("text", "audio"):
        meta = json.loads((tmp_path / "ix" / f"{space}.json").read_text())
        meta.pop("n"), meta.pop("format")
        (tmp_path / "ix" / f"{space}.json").write_text(json.dumps(dict(meta, ids=ids), indent=0))
    old = SegmentIndex.load(tmp_path / "ix")
    assert not old.memory_mapped and len(old) == 120
    assert _all_hits(old, ["rec0", "rec2"]) == _all_hits(ix2, ["rec0", "rec2"])
    # an index from a newer harp_lib: one clear line
    SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    man = json.loads((tmp_path / "ix" / "rows.json").read_text())
    (tmp_path / "ix" / "rows.json").write_text(json.dumps(dict(man, format=99)))
    with pytest.raises(IndexError_, match=r"rows.json: index format 99 is newer than this harp_lib reads \(2\)"):
        SegmentIndex.load(tmp_path / "ix")


def test_memory_mapped_index_detects_a_stale_or_cut_file(tmp_path):
    ex = _fake_extract(tmp_path / "ex")
    SegmentIndex.build(ex, tmp_path / "ix", progress=False)
    seg = tmp_path / "ix" / "segments.jsonl"
    good = seg.read_bytes()
    seg.write_bytes(good[:-40])
    with pytest.raises(IndexError_, match="segments.jsonl: size does not match rows.json"):
        SegmentIndex.load(tmp_path / "ix")
    seg.write_bytes(good)
    np.save(tmp_path / "ix" / "rows_starts.npy", np.zeros(7))
    with pytest.raises(IndexError_, match=r"rows_starts.npy: \(7,\) rows, expected 120"):
        SegmentIndex.load(tmp_path / "ix")
