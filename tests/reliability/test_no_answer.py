"""Issue #28, class 8: a refusal or prose is no answer, and no cache keeps it.

Before: "I am sorry, I cannot help with that." was recorded by ``harp infer`` as the answer
(no error), the client's reply cache (``llm.cache_dir``) replayed it after the server was fixed,
and a planner that refused was counted among the "plans repaired".
"""
from __future__ import annotations

import json

from harp_lib.agent.runner import _summary, run_setup
from harp_lib.llm import OpenAICompatClient

from test_llm_outputs import GOOD_PLAN, Server, _cfg, llm_root  # noqa: F401 - fixture

REFUSAL = "I am sorry, I cannot help with that."


def _is_plan_request(body) -> bool:
    return "guided_json" in body or "response_format" in body


def _cached_texts(cache_dir) -> list[str]:
    return [json.loads(p.read_text())["text"] for p in cache_dir.rglob("*.json")]


def test_a_refusal_is_no_answer_is_never_cached_and_is_asked_again(llm_root, tmp_path):  # noqa: F811
    state = {"fixed": False}

    def route(body, n):
        if state["fixed"]:
            return "ok", (GOOD_PLAN if _is_plan_request(body) else "No. Rationale: nothing in the evidence.")
        return "ok", REFUSAL                       # refuses to plan and to answer
    srv = Server(route)
    cache = tmp_path / "llm-cache"
    try:
        cfg = _cfg(llm_root, srv.url).with_overrides({"llm": {"cache_dir": str(cache)}})
        preds = run_setup(cfg, "clinical", "A2", progress=False)
        assert len(preds) == 6
        for p in preds:
            assert p.error and "NoAnswer" in p.error and f"is not an answer to a {p.query_type} question" in p.error, p
            assert REFUSAL[:20] in p.error and p.answer == ""
        assert REFUSAL not in _cached_texts(cache)                     # neither the plan nor the answer reply
        summary = _summary(preds)
        assert "6 with errors (6 no answer" in summary and "0 plans repaired" in summary
        assert "6 planner replies not a plan" in summary

        state["fixed"] = True                                          # the server is fixed: asked again
        n0 = len(srv.log)
        preds2 = run_setup(cfg, "clinical", "A2", progress=False)
        assert len(srv.log) - n0 == 6 * 2                              # plan + answer for every query
        assert [p.error for p in preds2] == [None] * 6 and {p.answer for p in preds2} == {"No."}
        assert "0 with errors" in _summary(preds2)
    finally:
        srv.close()


def test_forget_drops_a_cached_reply_so_a_fixed_server_is_asked_again(tmp_path):
    replies = iter([REFUSAL, "Yes. Rationale: heard it."])
    srv = Server(lambda body, n: ("ok", next(replies)))
    try:
        c = OpenAICompatClient(srv.url, "scripted", max_retries=0, cache_dir=tmp_path)
        r = c.complete(["Does the patient cough?"])
        assert r.text == REFUSAL and r.cache_key and _cached_texts(tmp_path) == [REFUSAL]
        assert c.complete(["Does the patient cough?"]).cached            # the cache replays it ...
        assert c.forget(r) and _cached_texts(tmp_path) == []             # ... until the caller drops it
        r2 = c.complete(["Does the patient cough?"])
        assert not r2.cached and r2.text.startswith("Yes") and len(srv.log) == 2
        assert not c.forget(r) and _cached_texts(tmp_path) == [r2.text]  # the newer reply stays
    finally:
        srv.close()


def test_an_llm_failure_is_one_warning_line_without_debug(llm_root, caplog):  # noqa: F811
    """Before: every failed query logged its traceback at WARNING level (about 10 lines each)."""
    srv = Server(lambda body, n: ("status", 503))
    try:
        cfg = _cfg(llm_root, srv.url)
        with caplog.at_level("WARNING", logger="harp_lib.agent.runner"):
            preds = run_setup(cfg, "clinical", "A2", limit=2, progress=False)
        assert all(p.error and "LLMError" in p.error for p in preds)
        msgs = [r.getMessage() for r in caplog.records if r.name == "harp_lib.agent.runner"
                and r.levelname == "WARNING" and "failed for query" in r.getMessage()]
        assert len(msgs) == 2 and all("\n" not in m and "Traceback" not in m for m in msgs), msgs
    finally:
        srv.close()


def test_the_answer_space_comes_from_the_question_text_not_the_benchmark_label():
    """The LLM answer check read ``Query.query_type`` (a benchmark label) at answer time; it now
    reads the task from the question text, so a wrong or missing label changes nothing."""
    from types import SimpleNamespace

    import pytest

    from harp_lib.agent.answerer import NoAnswer, check_answer_space
    from harp_lib.core.schema import Query
    text = "From 1 to 22.4 seconds, how did this speaker's valence change while discussing learning the piano?"
    q = Query("q", "emotion", "r", "state", text, {})           # a change question, mislabelled 'state'
    ctx = SimpleNamespace(query=q, domain="emotion")
    check_answer_space(None, None, ctx, "rising")               # a direction answers a change question
    with pytest.raises(NoAnswer, match="not an answer to a change question"):
        check_answer_space(None, None, ctx, "I am sorry, I cannot help with that.")
