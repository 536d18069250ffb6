"""The offline LLM answerer follows the evidence (issue #17): the real packaged 0.5B model answers
the same question twice, on evidence whose labels are swapped, and its answer must swap too.

Before the evidence digest and the intent-shaped answer field (harp_lib/agent/digest.py) the 0.5B
gave the same answer whatever the evidence (Table II LLM rows identical in A1-A6).
"""
from __future__ import annotations

import json

import pytest

from agent_helpers import emo_labels, emotion_queries
from harp_lib.agent.answerer import LLMAnswerer, text_answer_prompt
from harp_lib.agent.context import QueryContext, agent_params
from harp_lib.agent.digest import DIGEST_HEADER, evidence_digest
from harp_lib.config import SETUPS
from harp_lib.llm.local import LocalLLMClient, model_file
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet, Plan, PlanSet, Recording

SMALL = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    d = tmp_path_factory.mktemp("llm_weights")
    model_file(SMALL, d)
    return LocalLLMClient(SMALL, weights_dir=d, cache_dir=None, max_tokens=256)


def _ctx(q, setup="A1"):
    rec = Recording("r1", "emotion", "r1.wav", 120.0)
    return QueryContext(q, rec, SETUPS[setup], None, agent_params(None))


def _it(i, t0, spk, a):
    return EvidenceItem(f"r1_{i:04d}", t0, t0 + 9.0, spk, "we talked about the garden", emo_labels("Neutral", a))


def _comparison_evidence(a_vals, b_vals):
    s1 = EvidenceSet(1, "speaker A", 0.0, 60.0, tuple(_it(i, 10.0 * i, "S0", v) for i, v in enumerate(a_vals)))
    s2 = EvidenceSet(2, "speaker B", 0.0, 60.0, tuple(_it(10 + i, 5.0 + 10.0 * i, "S1", v) for i, v in enumerate(b_vals)))
    return Evidence((s1, s2))


def _change_evidence(vals):
    return Evidence((EvidenceSet(1, "From 40 to 90 seconds", 40.0, 90.0,
                                 tuple(_it(i, 40.0 + 12.0 * i, "S0", v) for i, v in enumerate(vals))),))


def _plan(n):
    return Plan(tuple(PlanSet(localize=f"set {i}") for i in range(1, n + 1)))


def test_digest_follows_the_visible_evidence_not_the_query_type():
    q = emotion_queries()[2]                                     # comparison: which speaker had higher arousal
    hi_a, _ = evidence_digest(_ctx(q), _comparison_evidence([0.8, 0.7], [0.3, 0.2]))
    hi_b, _ = evidence_digest(_ctx(q), _comparison_evidence([0.3, 0.2], [0.8, 0.7]))
    assert DIGEST_HEADER in hi_a and "A minus B = +0.50: higher arousal: speaker A; lower arousal: speaker B" in hi_a
    assert "A minus B = -0.50: higher arousal: speaker B; lower arousal: speaker A" in hi_b
    from dataclasses import replace
    blind = replace(q, query_type="state", ground_truth={})       # the digest reads the text, not the labels
    assert evidence_digest(_ctx(blind), _comparison_evidence([0.8, 0.7], [0.3, 0.2]))[0] == hi_a


@pytest.mark.slow
def test_packaged_model_answer_follows_swapped_speaker_labels(client):
    q = emotion_queries()[2]
    ans = {}
    for name, ev in (("A", _comparison_evidence([0.8, 0.75, 0.7], [0.3, 0.25, 0.2])),
                     ("B", _comparison_evidence([0.3, 0.25, 0.2], [0.8, 0.75, 0.7]))):
        a, why, meta = LLMAnswerer(client).answer(_ctx(q), _plan(2), ev)
        assert json.loads(meta["raw_output"])["answer"].split(" (")[0] == a
        ans[name] = a
    assert ans == {"A": "A", "B": "B"}, ans


@pytest.mark.slow
def test_packaged_model_answer_follows_reversed_trend(client):
    q = emotion_queries()[1]                                     # change of arousal from 40 to 90 s
    up = LLMAnswerer(client).answer(_ctx(q), _plan(1), _change_evidence([0.2, 0.25, 0.7, 0.75]))[0]
    down = LLMAnswerer(client).answer(_ctx(q), _plan(1), _change_evidence([0.75, 0.7, 0.25, 0.2]))[0]
    assert (up, down) == ("rising", "falling")
    p_up, choices = text_answer_prompt(_ctx(q), _plan(1), _change_evidence([0.2, 0.25, 0.7, 0.75]))
    assert list(choices.values()) == ["rising", "falling", "none"] and "second minus first = +0.50" in p_up
