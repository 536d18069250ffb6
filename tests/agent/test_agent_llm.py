"""The OpenAI-compatible client against a real local HTTP server (127.0.0.1, no network)."""
import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile as sf

from agent_helpers import FakeEmotionLabeler, emotion_queries
from harp_lib.agent.context import agent_params
from harp_lib.retrieval.references import Hearing
from harp_lib.agent.runner import Agent
from harp_lib.retrieval.tools import QueryEncoder
from harp_lib.agent.plan_parse import parse_plan
from harp_lib.agent.plan_schema import plan_json_schema
from harp_lib.config import SETUPS, get_backend
from harp_lib.llm import AudioPart, LLMError, OpenAICompatClient, make_client


class _Server:
    """Records requests; replies from a queue of (status, body) (last one repeats)."""

    def __init__(self):
        self.requests, self.replies = [], []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                n = int(self.headers["Content-Length"])
                outer.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                       "body": json.loads(self.rfile.read(n))})
                if callable(outer.replies):
                    status, body = outer.replies(outer.requests[-1]["body"])
                else:
                    status, body = outer.replies[min(len(outer.requests) - 1, len(outer.replies) - 1)]
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _ok(text, model="served-model"):
    return 200, {"model": model, "choices": [{"message": {"content": text}}], "usage": {"prompt_tokens": 42}}


def test_request_carries_audio_parts_and_the_plan_schema(server, tmp_path):
    plan = '{"sets": [{"localize": "around 3 min", "audio_emb": "A", "time": true}]}'
    server.replies = [_ok(plan)]
    c = OpenAICompatClient(server.url, "Qwen/Qwen3-Omni-30B-A3B-Instruct", cache_dir=tmp_path / "cache",
                           backoff_sec=0.0)
    schema = plan_json_schema(SETUPS["A5"].tools, roles=("A",), domain="emotion")
    wave = (0.1 * np.sin(np.arange(8000) / 5)).astype(np.float32)
    r = c.complete([AudioPart("[Snippet A]", wave, 16000), "Plan this query."], json_schema=schema)
    assert r.text == plan and r.model_id == "served-model" and not r.cached and r.audio_sec == 0.5
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"].startswith("Bearer ")
    body = req["body"]
    assert body["model"] == "Qwen/Qwen3-Omni-30B-A3B-Instruct" and body["temperature"] == 0.0
    content = body["messages"][0]["content"]
    assert body["messages"][0]["role"] == "user" and len(body["messages"]) == 1
    assert [b["type"] for b in content] == ["text", "input_audio", "text"]
    assert content[0]["text"] == "[Snippet A]" and content[2]["text"] == "Plan this query."
    audio_part = content[1]["input_audio"]
    assert audio_part["format"] == "wav"
    decoded, sr = sf.read(io.BytesIO(base64.b64decode(audio_part["data"])), dtype="float32")
    assert sr == 16000 and len(decoded) == 8000 and np.allclose(decoded, wave, atol=1e-3)
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == schema
    assert "guided_json" not in body          # newer vLLM ignores it; response_format is the default
    p = parse_plan(r.text, tools=SETUPS["A5"].tools, roles=("A",), domain="emotion")
    assert p.errors == () and p.sets[0].audio_emb == "A"


def test_retries_on_5xx_then_caches_on_disk(server, tmp_path):
    server.replies = [(503, {"error": "loading"}), (500, {"error": "oops"}), _ok("Happy. Rationale: [1.0s–2.0s]")]
    c = OpenAICompatClient(server.url, "m", cache_dir=tmp_path, max_retries=3, backoff_sec=0.0)
    r = c.complete(["q"])
    assert r.text.startswith("Happy") and len(server.requests) == 3
    again = OpenAICompatClient(server.url, "m", cache_dir=tmp_path, backoff_sec=0.0).complete(["q"])
    assert again.cached and again.text == r.text and len(server.requests) == 3     # no new request
    c.complete(["another prompt"])
    assert len(server.requests) == 4


def test_gives_up_after_bounded_retries_and_refuses_4xx_at_once(server):
    server.replies = [(502, {"error": "bad gateway"})]
    c = OpenAICompatClient(server.url, "m", max_retries=2, backoff_sec=0.0)
    with pytest.raises(LLMError, match="no answer after 3 tries.*HTTP 502"):
        c.complete(["q"])
    assert len(server.requests) == 3
    server.requests.clear()
    server.replies = [(400, {"error": "audio too long"})]
    with pytest.raises(LLMError, match="refused the request.*400"):
        c.complete(["q2"])
    assert len(server.requests) == 1


def test_unreachable_server_is_retried_and_named():
    c = OpenAICompatClient("http://127.0.0.1:9/v1", "m", max_retries=1, backoff_sec=0.0, timeout_sec=2)
    with pytest.raises(LLMError, match="127.0.0.1:9"):
        c.complete(["q"])


def test_schema_modes_and_registry(server, tmp_path):
    server.replies = [_ok("{}")]
    c = OpenAICompatClient(server.url, "m", schema_mode="guided_json")
    body = c.payload(["x"], json_schema={"type": "object"})
    assert "guided_json" in body and "response_format" not in body
    with pytest.raises(ValueError):
        OpenAICompatClient(server.url, "m", schema_mode="nope")
    assert get_backend("llm", "openai") is OpenAICompatClient
    cl = make_client({"backend": "openai", "base_url": server.url, "model": "x", "cache_dir": "c",
                      "max_concurrency": 4}, root=tmp_path)
    assert isinstance(cl, OpenAICompatClient) and cl.cache_dir == tmp_path / "c"


def _agent_reply(body):
    if "response_format" in body:      # the planner call
        return _ok('```json\n{"sets": [{"localize": "around 25 seconds", "keyword": "job", "audio_emb": "A", '
                   '"time": true}, {"localize": "whenever", "time": true}]}\n```')
    return _ok("Happy\nRationale: [20.0s–30.0s] S0 primary=Happy says \"I got the job\".")


@pytest.mark.parametrize("setup,attach_refs,expect", [
    ("A5", True, ["[Snippet A]", "[Set 1: 10-50 s]"]),     # "around 25 seconds": the moment's neighbours
    ("A3", True, ["[Snippet A]"]),
    ("A3", False, []),
    ("A4", False, ["[Snippet A]", "[Set 1: 10-50 s]"]),
])
def test_llm_planner_and_answerer_end_to_end(server, emotion_bench, setup, attach_refs, expect):
    server.replies = _agent_reply
    client = OpenAICompatClient(server.url, "omni", backoff_sec=0.0)
    params = agent_params(None, attach_references_in_metadata_setups=attach_refs)
    agent = Agent(emotion_bench["index"], setup, None, domain="emotion", planner="llm", answerer="llm",
                  client=client, params=params,
                  encoder=QueryEncoder(emotion_bench["index"].spaces, emotion_bench["embedders"]),
                  hearing=Hearing("emotion", labelers=[FakeEmotionLabeler()]))
    p = agent(emotion_queries()[0], emotion_bench["rec"], emotion_bench["root"])
    assert p.error is None and p.answer == "Happy" and p.rationale.startswith("[20.0s–30.0s]")
    assert p.backends["planner"] == "llm" and p.backends["planner_model"] == "served-model"
    assert len(p.plan.sets) == 2 and len(p.evidence.sets) == 2 and "stripped code fence" in p.plan.errors
    assert p.evidence.sets[1].error.startswith("localize failed")          # kept, numbering intact
    plan_req, ans_req = server.requests[-2]["body"], server.requests[-1]["body"]
    assert "response_format" in plan_req and "response_format" not in ans_req
    assert all(b["type"] == "text" for b in plan_req["messages"][0]["content"])
    blocks = ans_req["messages"][0]["content"]
    labels = [b["text"] for b, nxt in zip(blocks, blocks[1:]) if nxt["type"] == "input_audio"]
    assert labels == expect
    prompt = blocks[-1]["text"]
    assert "Evidence set time anchors:" in prompt and "Set 2: whenever" in prompt
    if setup == "A4":
        assert 'I am thrilled' not in prompt and "[20.0s–30.0s]" in prompt        # strip_domain
    elif setup in ("A3", "A5"):
        assert '"I got the job and I am thrilled"' in prompt
    assert "PLAN:" in p.raw_output and "ANSWER:" in p.raw_output
