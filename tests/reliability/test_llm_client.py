"""The LLM HTTP client against hostile servers on 127.0.0.1: a total deadline per request (a
server dripping one byte a second), a circuit breaker for a closed port, and a cache that keeps
only valid replies."""
from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from harp_lib.llm import LLMError, OpenAICompatClient

from test_llm_outputs import Server, _completion


class Dripper:
    """Accepts connections and answers each with a valid HTTP response, one byte per ``gap`` s."""

    def __init__(self, gap: float = 0.25, headers_first: bool = False):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.gap, self.headers_first, self.n = gap, headers_first, 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.n += 1
            threading.Thread(target=self._drip, args=(c,), daemon=True).start()

    def _drip(self, c):
        body = json.dumps(_completion("a reply that takes forever")).encode()
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                f"\r\n").encode()
        try:
            c.recv(65536)
            if self.headers_first:
                c.sendall(head)
                data = body
            else:
                data = head + body
            for i in range(len(data)):
                if self.stop.is_set():
                    break
                c.sendall(data[i:i + 1])
                time.sleep(self.gap)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.stop.set()
        self.sock.close()


@pytest.mark.parametrize("headers_first", [False, True], ids=["drip_headers", "drip_body"])
def test_slow_drip_server_is_cut_at_the_total_deadline(headers_first):
    """Every single read succeeds within a 1 s read time-out, yet the reply (~400 bytes at 4 B/s)
    would take ~100 s: the client must give up at its 1 s deadline per try."""
    srv = Dripper(gap=0.25, headers_first=headers_first)
    try:
        c = OpenAICompatClient(srv.url, "m", timeout_sec=1.0, max_retries=1, backoff_sec=0.0)
        t = time.monotonic()
        with pytest.raises(LLMError, match=r"no answer after 2 tries \(Timeout: no complete reply within the 1 s deadline"):
            c.complete(["q"])
        took = time.monotonic() - t
        assert took < 3.5, f"two 1 s tries took {took:.1f} s"
        assert srv.n == 2
    finally:
        srv.close()


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                      # nothing listens there now: connection refused
    return port


def test_closed_port_opens_the_circuit_after_n_failures():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    c = OpenAICompatClient(url, "m", max_retries=3, backoff_sec=0.2, timeout_sec=2, breaker_after=3)
    t = time.monotonic()
    with pytest.raises(LLMError, match=r"not trying: the last 3 connections failed \(ConnectionError"):
        c.complete(["q1"])
    first = time.monotonic() - t
    assert first < 1.5               # 3 refused tries, 2 back-offs (0.2 + 0.4 s); never the 4th try
    t = time.monotonic()
    for q in ("q2", "q3", "q4"):     # every later query fails at once with the same one message
        with pytest.raises(LLMError, match="not trying"):
            c.complete([q])
    assert time.monotonic() - t < 0.1
    # without the breaker the same queries would cost the full retry schedule each
    slow = OpenAICompatClient(url, "m", max_retries=3, backoff_sec=0.2, timeout_sec=2, breaker_after=99)
    t = time.monotonic()
    with pytest.raises(LLMError, match="no answer after 4 tries"):
        slow.complete(["q1"])
    assert time.monotonic() - t >= 1.4


def test_circuit_half_opens_and_closes_when_the_server_is_back():
    srv = Server(lambda body, n: ("ok", "Yes. Rationale: back"))
    port = int(srv.url.rsplit(":", 1)[1].split("/")[0])
    srv.close()                                   # down
    c = OpenAICompatClient(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff_sec=0.0,
                           timeout_sec=2, breaker_after=2, breaker_reset_sec=0.3)
    with pytest.raises(LLMError, match="not trying|no answer"):
        c.complete(["q"])
    with pytest.raises(LLMError, match="not trying"):
        c.complete(["q"])
    srv2 = Server(lambda body, n: ("ok", "Yes. Rationale: back"))
    try:
        c.base_url = srv2.url.rstrip("/")         # the server is back (on a new port here)
        time.sleep(0.35)                          # the half-open try goes through
        assert c.complete(["q"]).text == "Yes. Rationale: back"
        assert c._open_since is None and c._conn_failures == 0
    finally:
        srv2.close()


def test_only_valid_replies_are_cached(tmp_path):
    replies = {"n": 0}

    def route(body, n):
        replies["n"] = n
        if n == 1:
            return "raw", json.dumps({"model": "m", "choices": [{"message": {"content": ["a", "list"]}}]}).encode()
        if n == 2:
            return "ok", "this is prose, not the JSON plan"
        return "ok", '{"sets": []}'
    srv = Server(route)
    try:
        c = OpenAICompatClient(srv.url, "m", max_retries=0, cache_dir=tmp_path / "cache")
        with pytest.raises(LLMError, match=r"unexpected response \(message content is a list, expected a string\)"):
            c.complete(["plan this"], json_schema={"type": "object"})
        assert not list((tmp_path / "cache").rglob("*.json"))              # non-string content: not cached
        r = c.complete(["plan this"], json_schema={"type": "object"})
        assert r.text.startswith("this is prose") and not r.cached
        assert not list((tmp_path / "cache").rglob("*.json"))              # not JSON though a schema was asked
        r = c.complete(["plan this"], json_schema={"type": "object"})       # asked again, not served stale
        assert r.text == '{"sets": []}' and not r.cached and len(srv.log) == 3
        r = c.complete(["plan this"], json_schema={"type": "object"})
        assert r.cached and len(srv.log) == 3                              # the valid reply is cached
        # a cache entry holding a non-string reply (written by an older version) is ignored
        entry = next((tmp_path / "cache").rglob("*.json"))
        entry.write_text(json.dumps({"text": None, "model_id": "m"}))
        r = c.complete(["plan this"], json_schema={"type": "object"})
        assert not r.cached and len(srv.log) == 4
    finally:
        srv.close()
