"""The OpenAI-compatible client: any ``/chat/completions`` server (vLLM serving
Qwen3-Omni-30B-A3B-Instruct, as the paper does).

Audio goes as ``input_audio`` blocks, each preceded by a text block with its label
(:func:`harp_lib.llm.messages.build_messages`).  A JSON schema (the plan schema) is passed both as
OpenAI ``response_format`` and as vLLM ``guided_json`` so the decoder cannot emit an invalid plan.
Temperature 0, bounded retries with exponential back-off on time-outs / connection errors / HTTP
5xx, and an on-disk response cache keyed by a hash of the request, so a re-run costs nothing.
``timeout_sec`` is a total deadline per try (connect, send, every byte of the reply), not a
per-read time-out: a server dripping one byte a second is cut off at it (the sockets of a request
are tracked by :func:`_deadline_session` so the deadline timer can shut them).  After
``breaker_after`` consecutive connection failures the client's circuit opens and further calls
fail at once with one message (one half-open try every ``breaker_reset_sec``), so a closed port
costs seconds, not ~14 s per query.  Only valid replies are cached (string content, and parseable
JSON where a schema was asked for: :func:`_valid_reply`)."""
from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from harp_lib.llm.base import LLMClient, LLMError
from harp_lib.llm.messages import LLMResponse, Part, audio_seconds, build_messages, request_hash

__all__ = ["OpenAICompatClient"]

log = logging.getLogger("harp_lib.llm")     # the package's logger, as before the split: the same log lines


class OpenAICompatClient(LLMClient):
    """Chat completions against an OpenAI-compatible server (vLLM, OpenAI, ...).

    ``schema_mode`` says how a JSON schema is passed: ``response_format`` (OpenAI json_schema;
    the default: vLLM honours it, and newer vLLM ignores ``guided_json``), ``both`` (also the
    vLLM-only ``guided_json``, for old vLLM servers) or ``guided_json``.  The API key is read from
    the environment variable named by ``api_key_env`` (vLLM accepts any, default "EMPTY").
    """
    backend = "openai"
    supports_audio = True

    def __init__(self, base_url: str = "http://localhost:8091/v1",
                 model: str = "Qwen/Qwen3-Omni-30B-A3B-Instruct", *, temperature: float = 0.0,
                 max_tokens: int = 512, timeout_sec: float = 120.0, max_retries: int = 3,
                 backoff_sec: float = 2.0, cache_dir: Optional[str | os.PathLike] = None,
                 schema_mode: str = "response_format", api_key_env: str = "OPENAI_API_KEY",
                 breaker_after: int = 3, breaker_reset_sec: float = 30.0):
        if schema_mode not in ("both", "response_format", "guided_json"):
            raise ValueError(f"llm.schema_mode must be both|response_format|guided_json, got {schema_mode!r}")
        self.base_url = base_url.rstrip("/")
        self.model_id = model
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.timeout_sec = float(timeout_sec)
        self.max_retries = int(max_retries)
        self.backoff_sec = float(backoff_sec)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.schema_mode = schema_mode
        self.api_key = os.environ.get(api_key_env, "EMPTY")
        self.breaker_after = max(1, int(breaker_after))
        self.breaker_reset_sec = float(breaker_reset_sec)
        self._conn_failures = 0                  # consecutive tries that could not connect
        self._open_since: Optional[float] = None
        self._last_conn_error = ""
        self._breaker_lock = threading.Lock()

    def payload(self, parts: Sequence[Part], *, json_schema: Optional[dict] = None,
                max_tokens: Optional[int] = None) -> dict:
        """The JSON body sent to ``/chat/completions``."""
        body: dict[str, Any] = {"model": self.model_id, "messages": build_messages(parts),
                                "temperature": self.temperature,
                                "max_tokens": int(max_tokens or self.max_tokens)}
        if json_schema is not None:
            if self.schema_mode in ("both", "response_format"):
                # strict=False: OpenAI's strict mode demands every property be required, which
                # optional plan fields are not; vLLM enforces the schema either way
                name = re.sub(r"[^A-Za-z0-9_-]", "_", str(json_schema.get("title") or "response"))[:64]
                body["response_format"] = {"type": "json_schema",
                                           "json_schema": {"name": name, "schema": json_schema,
                                                           "strict": False}}
            if self.schema_mode in ("both", "guided_json"):
                body["guided_json"] = json_schema
        return body

    # circuit breaker -----------------------------------------------------------------
    def _breaker_check(self, url: str) -> None:
        with self._breaker_lock:
            if self._open_since is None:
                return
            if time.monotonic() - self._open_since >= self.breaker_reset_sec:
                self._open_since = time.monotonic()      # half-open: let this one try through
                return
        raise LLMError(f"{url}: not trying: the last {self._conn_failures} connections failed "
                       f"({self._last_conn_error}); is the server up? (scripts/serve_vllm.sh; "
                       f"retried after {self.breaker_reset_sec:g} s)")

    def _breaker_record(self, connect_error: Optional[str]) -> None:
        with self._breaker_lock:
            if connect_error is None:
                self._conn_failures, self._open_since = 0, None
                return
            self._conn_failures += 1
            self._last_conn_error = connect_error
            if self._conn_failures >= self.breaker_after:
                self._open_since = time.monotonic()

    def _post(self, url: str, body: dict):
        """One POST under a total deadline of ``timeout_sec``: when it passes, the socket is shut
        down, whatever the server is doing (a per-read time-out alone never fires against a
        server that sends a byte a second)."""
        import requests  # heavy: requests (~0.1 s), only when a server is asked
        socks: list = []
        _TRACK.socks = socks
        expired = threading.Event()

        def cut():
            expired.set()
            for sk in list(socks):
                try:
                    sk.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        timer = threading.Timer(self.timeout_sec, cut)
        timer.daemon = True
        timer.start()
        try:
            with _deadline_session() as sess:
                return sess.post(url, json=body, timeout=self.timeout_sec,
                                 headers={"Authorization": f"Bearer {self.api_key}"})
        except requests.RequestException as e:
            if expired.is_set():
                raise requests.Timeout(f"no complete reply within the {self.timeout_sec:g} s deadline "
                                       f"({type(e).__name__})") from None
            raise
        finally:
            timer.cancel()
            _TRACK.socks = None

    def complete(self, parts: Sequence[Part], *, json_schema: Optional[dict] = None,
                 max_tokens: Optional[int] = None) -> LLMResponse:
        import requests  # heavy: requests (~0.1 s), only when a server is asked
        body = self.payload(parts, json_schema=json_schema, max_tokens=max_tokens)
        key = request_hash({"url": self.base_url, **body})
        asec = audio_seconds(parts)
        hit = self._cache_get(key)
        if hit is not None:
            return LLMResponse(hit["text"], hit.get("model_id", self.model_id), self.backend, True, 0.0,
                               asec, hit.get("usage", {}), key)
        url = f"{self.base_url}/chat/completions"
        last = ""
        t0 = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            self._breaker_check(url)
            try:
                r = self._post(url, body)
            except requests.ConnectTimeout as e:     # no connection at all (a Timeout too)
                last = f"ConnectionError: {e}"
                self._breaker_record(last[:200])
            except requests.Timeout as e:
                last = f"Timeout: {e}"
                self._breaker_record(None)           # it connected; the server is slow, not gone
            except requests.ConnectionError as e:
                last = f"{type(e).__name__}: {e}"
                self._breaker_record(last[:200])
            else:
                self._breaker_record(None)
                if r.status_code < 300:
                    try:
                        data = r.json()
                        text = data["choices"][0]["message"]["content"]
                    except (ValueError, KeyError, IndexError, TypeError) as e:
                        raise LLMError(f"{url}: unexpected response ({e}): {r.text[:300]}") from None
                    if text is None:
                        text = ""
                    if not isinstance(text, str):
                        raise LLMError(f"{url}: unexpected response (message content is a "
                                       f"{type(text).__name__}, expected a string): {r.text[:300]}")
                    usage = data.get("usage") or {}
                    model = data.get("model") or self.model_id
                    if _valid_reply(text, json_schema):      # an invalid reply is used once, never cached
                        self._cache_put(key, {"text": text, "model_id": model, "usage": usage})
                    else:
                        log.warning("%s: reply is not the JSON the schema asks for; not cached", url)
                    return LLMResponse(text, model, self.backend, False,
                                       round(time.perf_counter() - t0, 3), asec, usage, key)
                last = f"HTTP {r.status_code}: {r.text[:300]}"
                if r.status_code < 500 and r.status_code != 429:
                    raise LLMError(f"{url} refused the request ({last}); check llm.model / the "
                                   f"server's --max-model-len and audio limits")
            if attempt < self.max_retries:
                self._breaker_check(url)             # no back-off sleep once the circuit is open
                time.sleep(self.backoff_sec * (2 ** attempt))
        raise LLMError(f"{url}: no answer after {self.max_retries + 1} tries ({last}); is the "
                       f"server up? (scripts/serve_vllm.sh)")


def _valid_reply(text: str, json_schema: Optional[dict]) -> bool:
    """A reply worth caching: non-empty text, and a JSON value where a schema was asked for."""
    if not text.strip():
        return False
    if json_schema is None:
        return True
    t = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        json.loads(t)
    except ValueError:
        return False
    return True


# sockets opened by the current thread's request, so the deadline timer can cut them
_TRACK = threading.local()
_SESSION_CLASSES: dict = {}


def _deadline_session():
    """A ``requests.Session`` whose connections register their sockets in ``_TRACK``."""
    import requests  # heavy: requests (~0.1 s), only when a server is asked
    if not _SESSION_CLASSES:
        from requests.adapters import HTTPAdapter  # heavy: requests (~0.1 s), only when a server is asked
        from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool  # heavy: urllib3, only when a server is asked

        def tracked(conn_cls):
            class Tracked(conn_cls):
                def _new_conn(self):
                    sk = super()._new_conn()
                    lst = getattr(_TRACK, "socks", None)
                    if lst is not None:
                        lst.append(sk)
                    return sk
            return Tracked

        class Pool(HTTPConnectionPool):
            ConnectionCls = tracked(HTTPConnectionPool.ConnectionCls)

        class TLSPool(HTTPSConnectionPool):
            ConnectionCls = tracked(HTTPSConnectionPool.ConnectionCls)

        class Adapter(HTTPAdapter):
            def init_poolmanager(self, *a, **kw):
                super().init_poolmanager(*a, **kw)
                self.poolmanager.pool_classes_by_scheme = {"http": Pool, "https": TLSPool}
        _SESSION_CLASSES["adapter"] = Adapter
    s = requests.Session()
    s.mount("http://", _SESSION_CLASSES["adapter"]())
    s.mount("https://", _SESSION_CLASSES["adapter"]())
    return s

