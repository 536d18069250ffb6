"""The answer cache of ``harp ask`` never outlives what it describes (issue #28, class 7).

Before: the key held the question, the audio hash, the clips, the setup and the configuration but
not the extraction: after a re-extraction (a re-ingest, a killed re-ingest of a changed file) the
old answer kept being served; a recording listed without extraction answered "no speech found"
and cached it.
"""
from __future__ import annotations

import dataclasses

import pytest

from harp_lib.core import audio
from harp_lib.ownaudio import ask
from harp_lib.ownaudio.collection import UserDataError, collection, find_recording
from harp_lib.ownaudio.ingest import ingest
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Segment

from rel_helpers import SR, cheap_cfg, flite


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    d = tmp_path_factory.mktemp("cache")
    a = flite("I have had a dry cough and a sore throat since Monday.", d / "a.wav", "slt")
    b = flite("Let me listen to your chest, please take a deep breath.", d / "b.wav", "rms")
    import numpy as np
    src = d / "talk.wav"
    audio.write(src, np.concatenate([a, np.zeros(SR // 2, np.float32), b]), SR)
    cfg = cheap_cfg(d / "root")
    (rec,) = ingest([src], "clinical", cfg=cfg, progress=False)
    assert rec.error is None and rec.segments > 0
    return cfg, rec.id


def test_a_re_extraction_is_never_answered_from_the_old_cache(ingested):
    cfg, rid = ingested
    q = "How many speakers are there?"
    first = ask.ask(rid, q, cfg=cfg)
    assert not first.cached and first.error is None
    assert ask.ask(rid, q, cfg=cfg).cached                   # the same state: served from the cache
    col = collection(cfg)
    seg_file = col.extract_dir("clinical") / "segments" / f"{rid}.jsonl"
    before = seg_file.read_bytes()
    segs = read_jsonl(seg_file, Segment)                          # a re-extraction with other speaker turns
    assert first.value == len({s.speaker for s in segs}) >= 2
    write_jsonl(seg_file, [dataclasses.replace(s, speaker="SPEAKER_00") for s in segs])   # one speaker now
    SegmentIndex.build(col.extract_dir("clinical"), col.index_dir("clinical"), progress=False)
    again = ask.ask(rid, q, cfg=cfg)
    assert not again.cached and again.key != first.key          # old code: cached=True, the old answer
    seg_file.write_bytes(before)
    SegmentIndex.build(col.extract_dir("clinical"), col.index_dir("clinical"), progress=False)
    back = ask.ask(rid, q, cfg=cfg)                          # the first state again: its cache entry
    assert back.cached and back.key == first.key and back.answer == first.answer


def test_a_recording_without_extraction_is_an_error_not_a_cached_empty_answer(ingested):
    cfg, rid = ingested
    col = collection(cfg)
    seg_file = col.extract_dir("clinical") / "segments" / f"{rid}.jsonl"
    keep = seg_file.read_bytes()
    n_cached = len(list(col.answers_dir.glob("*.json"))) if col.answers_dir.exists() else 0
    seg_file.unlink()
    try:
        with pytest.raises(UserDataError, match=r"has no extracted segments .*run `harp ingest"):
            ask.ask(rid, "How many speakers are there?", cfg=cfg)
    finally:
        seg_file.write_bytes(keep)
    assert (len(list(col.answers_dir.glob("*.json"))) if col.answers_dir.exists() else 0) == n_cached


def test_an_llm_refusal_is_no_answer_and_never_cached(ingested, tmp_path):
    """Before: "I am sorry, I cannot help with that." came back as the answer (rc 0) and was cached."""
    from test_llm_outputs import Server
    cfg, rid = ingested
    srv = Server(lambda body, n: ("ok", "I am sorry, I cannot help with that."))
    try:
        llm_cfg = cfg.with_overrides({"llm": {"backend": "openai", "base_url": srv.url, "model": "scripted",
                                              "max_retries": 0, "timeout_sec": 10, "cache_dir": str(tmp_path / "llm")}})
        q = "Does the patient cough?"
        ans = ask.ask(rid, q, cfg=llm_cfg, agent="llm")
        assert ans.error and "is not an answer to a" in ans.error and "I am sorry" in ans.error, ans
        assert not (collection(cfg).answers_dir / f"{ans.key}.json").exists()
        again = ask.ask(rid, q, cfg=llm_cfg, agent="llm")
        assert not again.cached and again.error
    finally:
        srv.close()


def test_agent_llm_without_a_server_says_so_at_once(ingested):
    """Before: "not available" only after the client's retries and back-off against localhost
    (3 tries, 2 + 4 s of back-off).  Now one connect, then one line naming the URL."""
    import time
    cfg, rid = ingested
    llm_cfg = cfg.with_overrides({"llm": {"backend": "openai", "base_url": "http://127.0.0.1:9/v1", "max_retries": 3,
                                          "backoff_sec": 2.0, "cache_dir": ""}})
    t0 = time.monotonic()
    with pytest.raises(UserDataError, match=r"--agent llm: no LLM server at http://127\.0\.0\.1:9/v1 "
                                                     r"\(Connection refused\).*--agent rule"):
        ask.ask(rid, "Does the patient cough?", cfg=llm_cfg, agent="llm")
    assert time.monotonic() - t0 < 2.0


@pytest.mark.slow
def test_agent_llm_with_the_shipped_url_and_no_server_asks_the_offline_model(ingested, tmp_path, monkeypatch, capsys):
    """Before (issue 40): `harp ask --agent llm` out of the box failed with "no LLM server at
    http://localhost:8091/v1" unless one knew -S llm.backend=local -S llm.model=...  Now, at the
    shipped default URL with nothing behind it, the offline model answers and one stderr line says
    which (a URL the user set stays an error: the test above)."""
    import json

    from harp_lib.app import cli
    cfg, rid = ingested
    assert ask._shipped_llm_url() == cfg.get("llm.base_url") == "http://localhost:8091/v1"
    dead = "http://127.0.0.1:9/v1"          # the default, as if no server listened there (port 9: discard)
    monkeypatch.setattr(ask, "_shipped_llm_url", lambda: dead)
    llm_cfg = cfg.with_overrides({"llm": {"base_url": dead},   # ci: llm_offline.model is the 0.5B
                                  "llm_offline": {"cache_dir": str(tmp_path / "llm")}})   # a fresh reply cache
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: llm_cfg)
    q = "Count the speakers please"                               # the rule classifier rejects it
    assert ask.ask(rid, q, cfg=cfg).answer == "unsupported question"
    capsys.readouterr()
    assert cli.main(["ask", rid, q, "--agent", "llm", "--json", "--quiet"]) == 0
    out = capsys.readouterr()
    ans = json.loads(out.out)
    assert (ans["intent"], ans["value"]) == ("n_speakers", ask.ask(rid, "How many speakers are there?", cfg=cfg).value)
    assert out.err.splitlines() == [f"harp ask: no LLM server at {dead}: the offline model qwen2.5-coder-0.5b answers "
                                    f"(set llm.base_url to use a server)"], out.err
    assert list((tmp_path / "llm").rglob("*.json")), "the offline model was not asked"


def test_terminal_escapes_in_a_question_are_never_echoed(ingested, capsys, monkeypatch):
    """Before: ``\\x1b[2J`` (clear screen), colours and an OSC window title in a question were printed raw."""
    from harp_lib.app import cli
    cfg, rid = ingested
    q = "How many \x1b[31mspeakers\x1b[0m are\x07 there?\x1b]0;owned\x07\x1b[2J"
    ans = ask.ask(rid, q, cfg=cfg, use_cache=False)
    assert ans.question == "How many speakers are there?" and ans.error is None
    monkeypatch.setattr(cli, "load_config", lambda *a, **k: cfg)
    assert cli.main(["ask", rid, q, "--no-cache", "--quiet"]) == 0
    out = capsys.readouterr()
    assert "How many speakers are there?" in out.out
    assert not any(c in out.out + out.err for c in "\x1b\x07\x9b"), out


def test_one_bad_collection_never_fails_the_questions_about_the_others(ingested, caplog):
    """Before: a collection with a corrupt manifest (or a folder name ``collection()`` refuses)
    under ``<data>/user/`` made every ``harp ask`` fail.  Now each is skipped with one warning."""
    import shutil
    cfg, rid = ingested
    user = collection(cfg).root.parent
    bad = user / "broken" / "emotion"
    bad.mkdir(parents=True)
    (bad / "recordings.jsonl").write_text('{"id": "x", "domain": "emotion", "audio_path": \n')
    (user / "-dash").mkdir()
    try:
        with caplog.at_level("WARNING", logger="harp_lib.ownaudio.collection"):
            ans = ask.ask(rid, "How many speakers are there?", cfg=cfg, use_cache=False)
        assert ans.error is None and ans.answer
        warns = sorted(r.getMessage() for r in caplog.records if r.name == "harp_lib.ownaudio.collection")
        assert len(warns) == 2, warns
        assert warns[0].startswith("skipping collection '-dash': collection name '-dash'")
        assert warns[1].startswith("skipping collection 'broken': ") and "recordings.jsonl: line 1" in warns[1]
        with pytest.raises(Exception, match=r"recordings\.jsonl: line 1"):         # named: its error is shown
            find_recording(cfg, "x", "broken")
    finally:
        shutil.rmtree(user / "broken")
        (user / "-dash").rmdir()
