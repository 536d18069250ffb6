"""The "add an ASR backend" recipe of docs/architecture.md: a backend registered for the ``asr``
stage by name, chosen in params (``extract.backends.asr``) with its options
(``extract.options.<name>``), runs in extraction.  Here the toy backend is registered from this
test module (the recipe's step 2, the import in extract/backends.py, is what makes a library
module findable; worker processes are not used: one recording, ``extract.workers`` 1)."""
from __future__ import annotations

from pathlib import Path

import pytest

from harp_lib.config import get_backend, load_config, register
from harp_lib.extract import pipeline as P
from harp_lib.extract.quality import load_stage1
from harp_lib.core.jsonl import read_jsonl
from harp_lib.core.schema import Segment

ROOT = Path(__file__).resolve().parents[2]


class ToyTicksASR:
    """One word per speech region the VAD found: ``<word>`` over the region (segment-relative)."""
    name, model_id = "toy_ticks", "toy-ticks-1"

    def __init__(self, word: str = "tick"):
        self.word = word

    def transcribe(self, wave, sr=16000, speech=None) -> dict:
        regions = [(0.0, len(wave) / sr)] if speech is None else [(s.start, s.end) for s in speech]
        words = [[self.word, round(a, 3), round(b, 3)] for a, b in regions if b > a]
        return {"text": " ".join(w for w, _, _ in words), "words": words}


@pytest.fixture(autouse=True, scope="module")
def _forget_the_toy_backend():
    """The toy is registered for this module's tests (``register`` as a library module would call
    it) and removed after them, so other tests see only the real backends (e.g. fetch-weights'
    list of valid names); registering at import leaked it into every later test."""
    from harp_lib.config import registry
    register("asr", "toy_ticks")(ToyTicksASR)
    yield
    registry._REGISTRY.pop(("asr", "toy_ticks"), None)


def test_recipe_names_the_files_it_changes():
    doc = (ROOT / "docs" / "architecture.md").read_text()
    recipe = doc.split("### Add an ASR backend", 1)[1].split("\n### ", 1)[0]
    for f in ("harp_lib/extract/<name>.py", "harp_lib/extract/backends.py", "params.yaml"):
        assert f"**`{f}`**" in recipe
    assert "from harp_lib.extract import" in (ROOT / "harp_lib" / "extract" / "backends.py").read_text()


@pytest.mark.slow
def test_a_registered_asr_backend_runs_in_extraction(speech_bench, tmp_path):
    assert get_backend("asr", "toy_ticks") is ToyTicksASR
    cfg = load_config(profile="mini", overrides={"extract": {
        "workers": 1, "backends": {"asr": "toy_ticks"}, "options": {"toy_ticks": {"word": "tock"}}}})
    out = tmp_path / "emotion"
    P.extract_domain(cfg, "emotion", bench_dir=speech_bench / "emotion", out_dir=out, progress=False)
    segs = read_jsonl(out / "segments" / "rec1.jsonl", Segment)
    assert segs and all(set(s.text.split()) <= {"tock"} for s in segs)
    assert sum(s.text.count("tock") for s in segs) >= len(segs) // 2          # speech was heard, words kept
    words = [w for s in segs for w in s.custom["words"]]
    assert words and all(w[0] == "tock" and w[1] < w[2] for w in words)
    assert all(s.start - 0.01 <= w[1] and w[2] <= s.end + 0.01 for s in segs for w in s.custom["words"])
    assert load_stage1(out, "rec1")["asr_model"] == "toy-ticks-1"          # the cache key names the backend
