"""LLM judges: verdict parsing, prompts, recorded model id / prompt hash, and the response cache
(through the real OpenAI-compatible client against a local stub server)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harp_lib.config import load_config
from harp_lib.evaluate.judge import judge_predictions, make_judge
from harp_lib.evaluate.llm_judge import LLMJudge, build_prompts, parse_verdict, prompts_hash
from harp_lib.llm import LLMResponse

from eval_fixtures import benchmark, item, judge_input, prediction


@pytest.mark.parametrize("text, want", [
    ('{"verdict": "YES", "reason": "ok"}', 1),
    ('```json\n{"verdict": "no", "reason": "wrong"}\n```', 0),
    ('{"verdict": "YES", "reason": "unterminated', 1),
    ("Let me think. The time is 1:42.\nFinal Answer: NO", 0),
    ("Answer: **YES**", 1),
    ("The emotion matches.\n\n**YES**", 1),
    ("reasoning mentions NO evidence problems... YES", 0),     # first upper-case token (paper rule 3)
    ("yes, it is correct", 1),
    ("I am not sure.", None),
    ("", None),
])
def test_parse_verdict(text, want):
    assert parse_verdict(text)[0] == want


class FakeClient:
    model_id = "fake/judge-1"

    def __init__(self, replies):
        self.replies = list(replies)
        self.prompts = []

    def complete(self, parts, *, json_schema=None, max_tokens=None):
        assert json_schema is not None and json_schema["required"] == ["verdict", "reason"]
        self.prompts.append(parts[0])
        return LLMResponse(self.replies.pop(0), "fake/judge-1-20250101", "fake")


def test_llm_judge_three_calls_and_records_model_and_hash():
    q = benchmark("emotion").queries["e_locate"]
    p = prediction(q, "1:42 (Angry)", "[98.0s–106.0s] primary=Angry", [item("x", 98, 106, "SPEAKER_01", primary="Angry")],
                   setup="A5", clip=(90.0, 110.0))
    fc = FakeClient(['{"verdict": "YES", "reason": "in window"}', "NO", '{"verdict": "YES", "reason": "grounded"}'])
    j = LLMJudge(name="fake", client=fc, locate_tolerance_sec=3.0).judge(judge_input(p))
    assert (j.answer, j.factual, j.faithful, j.rationale) == (1, 0, 1, 0)
    assert j.model_id == "fake/judge-1-20250101" and j.prompt_hash == prompts_hash() and j.judge == "fake"
    answer_prompt, factual_prompt, faithful_prompt = fc.prompts
    assert "accept window 97.0-107.0 s" in answer_prompt and "[97.0 s, 107.0 s]" in answer_prompt
    assert "Angry" in answer_prompt and "1:42 (Angry)" in answer_prompt
    assert "[97.0, 107.0]" in factual_prompt
    # the evidence as the answerer saw it (agent renderer) and the audio note for A5
    assert "[98.0s–106.0s]" in faithful_prompt and "primary=Angry" in faithful_prompt
    assert "heard one audio clip per evidence set" in faithful_prompt


def test_llm_judge_audio_only_setup_asks_two_questions_and_unparseable_is_no():
    q = benchmark("clinical").queries["c_rep"]
    p = prediction(q, "Yes", "she says so", [item("c", 20, 40, text="bad cough")], setup="A6")
    fc = FakeClient(["YES", "hmm, hard to say"])
    j = LLMJudge(name="fake", client=fc).judge(judge_input(p))
    assert len(fc.prompts) == 2
    assert (j.answer, j.factual, j.faithful, j.rationale) == (1, 0, 1, 0)
    assert "unparseable" in j.error


def test_metadata_faithful_prompt_says_no_audio_and_shows_text():
    q = benchmark("emotion").queries["e_state"]
    items = [item("x", 32, 58, "SPEAKER_01", "so glad", primary="Happy")]
    meta = build_prompts(judge_input(prediction(q, "Happy", "r", items, setup="A3")), 3.0)["faithful"]
    assert "heard no audio" in meta and 'so glad' in meta


@pytest.fixture
def stub_server():
    calls = []

    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(body)
            text = body["messages"][0]["content"][0]["text"]
            verdict = "YES" if "Question type: state" in text or "grounded" in text else "NO"
            out = json.dumps({"model": body["model"] + "@stub", "choices": [{"message": {
                "content": json.dumps({"verdict": verdict, "reason": "stub"})}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", calls
    srv.shutdown()
    srv.server_close()


def test_configured_llm_judge_caches_responses(stub_server, tmp_path):
    url, calls = stub_server
    cfg = load_config().with_overrides({"evaluate": {"llm_cache_dir": str(tmp_path / "cache"),
                                                     "llm_judges": {"qwen": {"base_url": url}}}})
    judge = make_judge("qwen", cfg)
    assert judge.model_id == "Qwen/Qwen3-4B-Instruct-2507"
    q = benchmark("emotion").queries["e_state"]
    preds = [prediction(q, "Happy", "[32.0s–58.0s] primary=Happy", [item("x", 32, 58, primary="Happy")])]
    first = judge_predictions(preds, benchmark("emotion"), judge)
    assert len(calls) == 3 and all(c["temperature"] == 0.0 for c in calls)
    assert first[0].model_id == "Qwen/Qwen3-4B-Instruct-2507@stub" and first[0].answer == 1
    again = judge_predictions(preds, benchmark("emotion"), make_judge("qwen", cfg))
    assert len(calls) == 3                                   # served from the disk cache
    assert again == first
