"""LLM output we do not control, served by a real HTTP server on 127.0.0.1.

The server answers ``/v1/chat/completions`` with scripted misbehaviour: prose instead of a
JSON plan, plans naming disabled tools / unknown reference roles / unreadable time phrases,
empty answers, answers without "Rationale:", HTTP 5xx, replies slower than the client's
time-out, and 200 responses whose body is not a completion.  Every query still gets a
prediction (failed ones with ``error``); judging continues; a resumed run retries exactly the
queries whose LLM calls failed and leaves the others byte-identical.
"""
from __future__ import annotations

import json
import re
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harp_lib.agent.runner import run_setup
from harp_lib.evaluate.judge import judge_predictions
from harp_lib.evaluate.llm_judge import LLMJudge
from harp_lib.evaluate.store import load_benchmark
from harp_lib.llm import LLMError, OpenAICompatClient
from harp_lib.core.jsonl import read_jsonl, write_jsonl
from harp_lib.core.schema import Judgement, Prediction, Query

from rel_helpers import cheap_cfg


def _completion(text: str) -> dict:
    return {"model": "scripted", "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1}}


class Server:
    """A scripted OpenAI-compatible server.  ``route(body, n)`` returns one of
    ``("ok", text)``, ``("status", code)``, ``("sleep", seconds)``, ``("raw", bytes)``."""

    def __init__(self, route):
        self.route, self.log = route, []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.log.append((time.monotonic(), body))
                kind, arg = outer.route(body, len(outer.log))
                try:
                    if kind == "sleep":
                        time.sleep(arg)
                        kind, arg = "ok", "too late"
                    if kind == "status":
                        data, code = json.dumps({"error": {"message": f"scripted {arg}"}}).encode(), arg
                    elif kind == "raw":
                        data, code = arg, 200
                    else:
                        data, code = json.dumps(_completion(arg)).encode(), 200
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):   # the client gave up (time-out)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = Server(lambda body, n: ("ok", "fine"))
    yield s
    s.close()


def client(url: str, **kw) -> OpenAICompatClient:
    return OpenAICompatClient(url, "scripted", **{"max_retries": 2, "backoff_sec": 0.05, "timeout_sec": 0.5, **kw})


# ---------------------------------------------------------------------------------- client
def test_5xx_is_retried_with_exponential_backoff(server):
    codes = iter([500, 502, 429])
    server.route = lambda b, n: ("status", next(codes)) if n <= 3 else ("ok", "Yes. Rationale: ok")
    r = client(server.url, max_retries=3).complete(["hi"])
    assert r.text == "Yes. Rationale: ok" and len(server.log) == 4
    gaps = [b[0] - a[0] for a, b in zip(server.log, server.log[1:])]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.10 and gaps[2] >= 0.20      # 0.05 * 2**attempt


def test_retries_are_bounded(server):
    server.route = lambda b, n: ("status", 503)
    t = time.monotonic()
    with pytest.raises(LLMError, match=r"no answer after 3 tries \(HTTP 503"):
        client(server.url).complete(["hi"])
    assert len(server.log) == 3 and time.monotonic() - t < 2.0


def test_server_slower_than_the_timeout(server):
    server.route = lambda b, n: ("sleep", 1.5)
    t = time.monotonic()
    with pytest.raises(LLMError, match=r"no answer after 2 tries \(.*(Timeout|timed out)"):
        client(server.url, max_retries=1, timeout_sec=0.3).complete(["hi"])
    assert len(server.log) == 2 and time.monotonic() - t < 1.5


@pytest.mark.parametrize("reply,match,tries", [
    (("raw", b"<html>502 Bad Gateway</html>"), "unexpected response", 1),
    (("raw", b'{"choices": []}'), "unexpected response", 1),
    (("raw", b'{"choices": [{"message": {}}]}'), "unexpected response", 1),
    (("status", 400), r"refused the request \(HTTP 400", 1),         # not retried: our request is wrong
])
def test_bad_payloads_are_clear_errors(server, reply, match, tries):
    server.route = lambda b, n: reply
    with pytest.raises(LLMError, match=match):
        client(server.url).complete(["hi"])
    assert len(server.log) == tries


def test_unreachable_server():
    with pytest.raises(LLMError, match=r"no answer after 2 tries \(ConnectionError"):
        client("http://127.0.0.1:9/v1", max_retries=1, backoff_sec=0.0).complete(["hi"])


# ---------------------------------------------------------------------------------- agent run
DISABLED_AND_UNKNOWN = json.dumps({"sets": [{"localize": "sometime after lunch", "keyword": "cough",
                                             "audio_emb": "C", "domain_emb": "Snippet Z", "colour": "red"}]})
GOOD_PLAN = json.dumps({"sets": [{"localize": "full recording", "audio_emb": None}]})
CASES = {  # case -> (planner reply, answerer reply); planner requests carry the plan schema
    0: (("ok", "Let me think. The patient probably coughs around minute three."), ("ok", "No. Rationale: none heard.")),
    1: (("ok", DISABLED_AND_UNKNOWN), ("ok", "Yes")),                       # no "Rationale:"
    2: (("ok", GOOD_PLAN), ("ok", "")),                                     # empty answer
    3: (("status", 500), ("status", 500)),
    4: (("sleep", 1.0), ("sleep", 1.0)),
    5: (("ok", GOOD_PLAN), ("raw", b"not json at all")),
}


def _case(body) -> int:
    text = " ".join(c.get("text", "") for m in body["messages"] for c in m["content"] if c["type"] == "text")
    return int(re.search(r"\(case (\d)\)", text).group(1))


def scripted(body, n):
    c = _case(body)
    return CASES[c][0] if ("guided_json" in body or "response_format" in body) else CASES[c][1]


def healthy(body, n):
    if "guided_json" in body or "response_format" in body:
        return "ok", GOOD_PLAN
    return "ok", "No. Rationale: nothing in the evidence."


@pytest.fixture()
def llm_root(ci_reference, tmp_path) -> Path:
    """The reference benchmark + index, queries tagged "(case i)" so the server can tell them apart."""
    root = tmp_path / "root"
    for sub in ("benchmark", "index"):
        shutil.copytree(ci_reference / sub, root / sub)
    qf = root / "benchmark" / "clinical" / "queries.jsonl"
    qs = read_jsonl(qf, Query)
    assert len(qs) == len(CASES)
    write_jsonl(qf, [q.replace(text=f"{q.text} (case {i})") for i, q in enumerate(qs)])
    return root


def _cfg(root: Path, url: str):
    return cheap_cfg(root, agent={"planner": "llm", "answerer": "llm"},
                     llm={"backend": "openai", "base_url": url, "model": "scripted", "max_retries": 1,
                          "backoff_sec": 0.01, "timeout_sec": 0.3, "cache_dir": ""})


def test_llm_failures_mark_queries_failed_and_resume_retries_them(llm_root, server):
    server.route = scripted
    cfg = _cfg(llm_root, server.url)
    preds = run_setup(cfg, "clinical", "A2", progress=False)
    out = llm_root / "predictions" / "clinical" / "A2.jsonl"
    by = dict(enumerate(preds))                                               # query file order = case order
    assert len(preds) == 6 and len(read_jsonl(out, Prediction)) == 6          # nothing dropped
    p0, p1, p2, p3, p4, p5 = (by[i] for i in range(6))
    # 0: prose instead of a plan -> recorded, fallback plan, still answered
    assert p0.error is None and p0.answer == "No." and p0.rationale == "none heard."
    assert any("no JSON object" in e for e in p0.plan.errors) and "fell back" in p0.plan.errors[-1]
    # 1: disabled tool, unknown roles, unknown field, unreadable time phrase; answer without Rationale
    errs = " | ".join(p1.plan.errors)
    assert "tool 'keyword' is not enabled" in errs
    assert "audio_emb='C' is not an available reference role" in errs
    assert "domain_emb='Snippet Z' is not an available reference role" in errs
    assert "unknown field 'colour'" in errs
    assert "cannot read a time window from 'sometime after lunch'" in (p1.evidence.sets[0].error or "")
    assert p1.error is None and (p1.answer, p1.rationale) == ("Yes", "")
    # 2: empty answer -> failed with the reason
    assert "empty answer" in p2.error
    # 3, 4, 5: server errors after bounded retries -> failed, named
    assert "LLMError" in p3.error and "HTTP 500" in p3.error and "no answer after 2 tries" in p3.error
    assert "LLMError" in p4.error and re.search("Timeout|timed out", p4.error)
    assert "LLMError" in p5.error and "unexpected response" in p5.error
    assert p3.plan.sets == () and p3.answer == ""

    # the rule judge grades all six; failed predictions carry their error, no rationale scores 0
    bench = load_benchmark("clinical", cfg)
    from harp_lib.evaluate.judge import make_judge
    js = judge_predictions(preds, bench, make_judge("rule", cfg))
    assert len(js) == 6
    assert js[1].factual == 0 and "no rationale" in js[1].reasons["factual"]
    assert js[3].error and "LLMError" in js[3].error

    # resume with a healthy server: only the LLM failures (3, 4, 5) are redone
    lines = out.read_bytes().splitlines()
    n_before = len(server.log)
    server.route = healthy
    preds2 = run_setup(cfg, "clinical", "A2", progress=False)
    assert len(server.log) - n_before == 3 * 2                              # plan + answer per retried query
    after = out.read_bytes().splitlines()
    assert len(after) == 6 and after[:3] == lines[:3]                       # earlier rows untouched
    ids = [json.loads(x)["query_id"] for x in after]
    assert len(set(ids)) == 6
    assert [p.query_id for p in preds2] == [p.query_id for p in preds]
    assert [p.error for p in preds2][3:] == [None, None, None]
    assert preds2[2].error and "empty answer" in preds2[2].error            # not an LLM outage: kept


@pytest.mark.slow
def test_llm_judge_outage_is_recorded_and_retried_on_resume(ci_reference, server, tmp_path):
    cfg = cheap_cfg(ci_reference)
    bench = load_benchmark("clinical", cfg)
    preds = read_jsonl(ci_reference / "predictions" / "clinical" / "A1.jsonl", Prediction)
    out = tmp_path / "A1.qwen.jsonl"
    server.route = lambda b, n: ("status", 503)
    judge = LLMJudge(name="qwen", client=client(server.url, max_retries=1, backoff_sec=0.01))
    js = judge_predictions(preds, bench, judge, out_path=out)
    assert len(js) == len(preds) == len(read_jsonl(out, Judgement))          # marked failed, not dropped
    assert all("judge LLM failed" in j.error and "HTTP 503" in j.error for j in js)
    assert all(j.answer == 0 for j in js)
    server.route = lambda b, n: ("ok", '{"verdict": "YES", "reason": "matches"}')
    js2 = judge_predictions(preds, bench, judge, out_path=out)
    rows = read_jsonl(out, Judgement)
    assert len(rows) == len(preds) and len({j.query_id for j in rows}) == len(preds)
    assert all(j.error is None and j.answer == 1 for j in js2)
