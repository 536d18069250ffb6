"""The OpenAI-compatible client against a real local HTTP server (127.0.0.1, no network)."""
import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import soundfile as sf

from harp_lib.agent.planner import parse_plan, plan_json_schema
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
    assert body["guided_json"] == schema
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
