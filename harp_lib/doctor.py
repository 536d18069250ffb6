"""``harp doctor``: before a long run, say which weights, tokens, servers and files are missing.

    harp doctor --profile paper          # one line per check, exit 1 if anything required is missing

Nothing is downloaded: weights are looked up in the local Hugging Face cache
(``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``) and the openai-whisper
cache, tokens in the environment, the vLLM server with one ``GET /v1/models`` (short timeout),
corpus files on disk.

>>> c = Check("token", "HF_TOKEN", "missing", "not set", "export HF_TOKEN=...")
>>> c.line().split()[:3]
['MISSING', 'token', 'HF_TOKEN']
"""
from __future__ import annotations

import importlib.util
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

from .config import Config

__all__ = ["Check", "run_checks", "BACKEND_REQUIREMENTS", "JUDGE_KEYS", "hf_cache_dir",
           "hf_cached"]


@dataclass(frozen=True)
class Check:
    """One line of the report.  ``status`` is ok, missing or warn; ``required`` missing -> exit 1."""
    kind: str       # weights | token | server | files | package
    name: str
    status: str
    detail: str
    fix: str = ""
    required: bool = True

    def line(self) -> str:
        tag = {"ok": "OK", "missing": "MISSING" if self.required else "OPTIONAL", "warn": "WARN"}[self.status]
        fix = f" -> {self.fix}" if self.fix and self.status != "ok" else ""
        return f"{tag:<8} {self.kind:<8} {self.name:<48} {self.detail}{fix}"


# (kind, id, gated) per paper backend; kind: hf (HF cache), whisper (openai-whisper cache),
# env_file (a file named by an environment variable), package (importable module)
BACKEND_REQUIREMENTS: dict[tuple[str, str], list[tuple[str, str, bool]]] = {
    ("vad", "pyannote"): [("hf", "pyannote/segmentation-3.0", True)],
    ("diarization", "pyannote"): [("hf", "pyannote/speaker-diarization-community-1", True)],
    ("song_boundaries", "mert"): [("hf", "m-a-p/MERT-v1-95M", False)],
    ("asr", "whisper"): [("whisper", "large-v3-turbo", False)],
    ("text_emb", "bge_small"): [("hf", "BAAI/bge-small-en-v1.5", False)],
    ("audio_emb", "pyannote_embedding"): [("hf", "pyannote/embedding", True)],
    ("audio_emb", "openbeats"): [("hf", "espnet/OpenBEATS-Large-i2-as20k", False)],
    ("domain_emb", "emotion2vec"): [("hf", "emotion2vec/emotion2vec_base", False)],
    ("domain_emb", "mert"): [("hf", "m-a-p/MERT-v1-95M", False)],
    ("labelers", "wavlm_ser"): [("hf", "3loi/SER-Odyssey-Baseline-WavLM-Categorical", False)],
    ("labelers", "cser"): [("hf", "microsoft/wavlm-large", False), ("env_file", "HARP_CSER_CKPT", False)],
    ("labelers", "coughkit"): [("package", "coughkit", False)],
    ("labelers", "music_aesthetics"): [("hf", "laion/music-whisper", False),
                                       ("hf", "laion/music-aesthetics", False)],
}
#: Judge name -> environment variables holding its API key (any one suffices).
JUDGE_KEYS: dict[str, tuple[str, ...]] = {
    "gpt4o": ("OPENAI_API_KEY",), "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "claude": ("ANTHROPIC_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",),
}
_FIX_EXTRA = {
    "coughkit": "git clone https://github.com/bagustris/coughkit && pip install -e coughkit (see docs/paper.md)",
    "HARP_CSER_CKPT": "download the CSER checkpoint from HF cjli/harp and export HARP_CSER_CKPT=/path/epoch_200.pt",
}


def hf_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The Hugging Face hub cache folder, as huggingface_hub resolves it."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]) / "hub"
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def hf_cached(repo_id: str, env: Mapping[str, str] = os.environ) -> Optional[Path]:
    """The newest snapshot folder of ``repo_id`` holding files, or None (no network)."""
    snaps = hf_cache_dir(env) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    if not snaps.is_dir():
        return None
    full = [s for s in snaps.iterdir() if s.is_dir() and any(s.iterdir())]
    return max(full, key=lambda s: s.stat().st_mtime) if full else None


def _hf_token(env: Mapping[str, str]) -> Optional[str]:
    if env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN"):
        return "environment"
    tok = (Path(env["HF_HOME"]) if env.get("HF_HOME") else Path.home() / ".cache" / "huggingface") / "token"
    return str(tok) if tok.is_file() and tok.read_text().strip() else None


def _backend_names(backends: Mapping) -> list[tuple[str, str]]:
    """(stage, name) pairs from ``extract.backends`` (values: name | {domain: name | [names]} | [names])."""
    out = set()
    for stage, val in backends.items():
        vals = val.values() if isinstance(val, Mapping) else [val]
        for v in vals:
            for name in (v if isinstance(v, (list, tuple)) else [v]):
                if name:
                    out.add((stage, str(name)))
    return sorted(out)


def _weight_checks(cfg: Config, env) -> tuple[list[Check], list[str]]:
    checks, gated = [], []
    seen = set()
    for stage, name in _backend_names(cfg.extract.backends):
        reqs = BACKEND_REQUIREMENTS.get((stage, name))
        if reqs is None:
            checks.append(Check("weights", f"{stage}:{name}", "ok", "offline backend (weights ship with "
                                "its package or none needed)", required=False))
            continue
        for kind, ident, is_gated in reqs:
            if (kind, ident) in seen:
                continue
            seen.add((kind, ident))
            who = f"needed by {stage}:{name}"
            if kind == "hf":
                snap = hf_cached(ident, env)
                if is_gated:
                    gated.append(ident)
                fix = (f"huggingface-cli download {ident}" + (f" (gated: accept the terms at "
                       f"https://huggingface.co/{ident} and set HF_TOKEN first)" if is_gated else ""))
                checks.append(Check("weights", ident, "ok" if snap else "missing",
                                    f"HF cache: {snap}" if snap else f"not in {hf_cache_dir(env)}; {who}", fix))
            elif kind == "whisper":
                base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
                f = base / "whisper" / f"{ident}.pt"
                checks.append(Check("weights", f"whisper:{ident}", "ok" if f.is_file() else "missing",
                                    str(f) if f.is_file() else f"{f} not found; {who}",
                                    f"python -c \"import whisper; whisper.load_model('{ident}')\" on a machine "
                                    f"with network, then copy {f}"))
            elif kind == "env_file":
                val = env.get(ident)
                ok = bool(val) and Path(val).is_file()
                checks.append(Check("weights", ident, "ok" if ok else "missing",
                                    val if ok else (f"{val} does not exist" if val else "not set") + f"; {who}",
                                    _FIX_EXTRA.get(ident, f"export {ident}=...")))
            elif kind == "package":
                ok = importlib.util.find_spec(ident) is not None
                checks.append(Check("package", ident, "ok" if ok else "missing",
                                    "importable" if ok else f"not importable; {who}", _FIX_EXTRA.get(ident, "")))
    topic = ((cfg.datasets or {}).get("emotion") or {}).get("topic")  # paper profile only
    if topic == "qwen":
        from .datasets.longemo import PAPER_TOPIC_MODEL
        snap = hf_cached(PAPER_TOPIC_MODEL, env)
        checks.append(Check("weights", PAPER_TOPIC_MODEL, "ok" if snap else "missing",
                            f"HF cache: {snap}" if snap else "topic phrases for emotion queries (datasets.emotion.topic: qwen)",
                            f"huggingface-cli download {PAPER_TOPIC_MODEL}"))
    return checks, gated


def _judge_specs(cfg: Config) -> list[tuple[str, dict]]:
    """(judge name, its settings merged over ``llm:``) for the LLM judges in ``evaluate.judges``."""
    table = cfg.evaluate.llm_judges           # judge names are checked against it when params load
    base = dict(cfg.llm)
    out = []
    for j in cfg.evaluate.judges:
        j = str(j)
        if j == "rule":
            continue
        out.append((j, {**base, **dict(table[j] or {})}))
    return out


def _token_checks(cfg: Config, env, gated: Sequence[str]) -> list[Check]:
    checks = []
    if gated:
        where = _hf_token(env)
        checks.append(Check("token", "HF_TOKEN", "ok" if where else "missing",
                            f"found ({where})" if where else f"not set; gated models: {', '.join(gated)}",
                            "accept the model terms on huggingface.co, then export HF_TOKEN=hf_... "
                            "(or huggingface-cli login)"))
    for j, spec in _judge_specs(cfg):
        keys = (spec["api_key_env"],) if spec.get("api_key_env") else JUDGE_KEYS.get(j.lower())
        if not keys:
            continue
        have = next((k for k in keys if env.get(k)), None)
        checks.append(Check("token", " or ".join(keys), "ok" if have else "missing",
                            f"{have} set (judge {j})" if have else f"not set; needed by judge {j!r}",
                            f"export {keys[0]}=... or drop {j!r} from evaluate.judges"))
    return checks


def _local(url: str) -> bool:
    from urllib.parse import urlparse
    return (urlparse(url).hostname or "") in ("localhost", "127.0.0.1", "0.0.0.0", "::1")


def _servers(cfg: Config) -> list[tuple[str, Optional[str], str]]:
    """(base_url, model, who) of every local OpenAI-compatible server the profile talks to."""
    out = []
    if "llm" in (cfg.agent.planner, cfg.agent.answerer) \
            and cfg.llm.backend == "openai":
        out.append((cfg.llm.base_url, cfg.llm.model, "planner/answerer"))
    for j, spec in _judge_specs(cfg):
        if spec["backend"] == "openai" and spec["base_url"] and _local(spec["base_url"]):
            out.append((spec["base_url"], spec["model"], f"judge {j}"))
    seen, uniq = set(), []
    for url, model, who in out:
        if (url, model) not in seen:
            seen.add((url, model))
            uniq.append((url, model, who))
    return uniq


def probe_server(base_url: str, model: Optional[str], timeout: float, who: str = "") -> Check:
    """``GET {base_url}/models``; ok when it answers and serves ``model``."""
    url = base_url.rstrip("/") + "/models"
    for_ = f" (for {who})" if who else ""
    fix = "start the vLLM server (docs/paper.md, 'Serving'), or fix base_url in params.yaml"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:   # noqa: S310 - local server
            data = json.loads(r.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        return Check("server", url, "missing", f"no answer within {timeout:g} s ({reason}){for_}", fix)
    ids = [m.get("id") for m in data.get("data", []) if isinstance(m, Mapping)]
    if model and model not in ids:
        return Check("server", url, "missing", f"answers but serves {ids or 'no model'}, not {model}{for_}",
                     f"serve {model} there, or set llm.model to one of {ids}")
    return Check("server", url, "ok", f"serves {', '.join(map(str, ids))}")


def _file_checks(cfg: Config) -> list[Check]:
    from .datasets.cli import _check, _params, _src
    checks = []
    bench = cfg.path("paths.benchmark")
    for dom in cfg.domains:
        folder = bench / dom
        missing = [n for n in ("recordings.jsonl", "segments.jsonl", "queries.jsonl") if not (folder / n).is_file()]
        if not missing:
            checks.append(Check("files", f"{folder}", "ok", "prepared corpus present"))
            continue
        try:
            params = _params(dom, cfg)
        except ValueError as e:
            checks.append(Check("files", f"datasets.{dom}", "missing", str(e), "fix params.yaml"))
            continue
        src = _src(dom, cfg, params, None)
        problems = _check(dom, src, params)
        if problems:
            checks.append(Check("files", f"{folder}", "missing",
                                f"not prepared, and the raw corpus at {src} is incomplete: " + "; ".join(problems),
                                f"get the raw files (docs/paper.md), then harp prepare {dom}"))
        else:
            checks.append(Check("files", f"{folder}", "missing", f"not prepared ({', '.join(missing)} missing); "
                                f"raw corpus at {src} is complete", f"harp prepare {dom}"))
    return checks


def run_checks(cfg: Config, *, timeout: float = 3.0, env: Optional[Mapping[str, str]] = None,
               servers: bool = True) -> list[Check]:
    """Every check for ``cfg`` (never downloads; one short HTTP GET per server)."""
    env = os.environ if env is None else env
    weights, gated = _weight_checks(cfg, env)
    checks = weights + _token_checks(cfg, env, gated)
    if servers:
        checks += [probe_server(url, model, timeout, who) for url, model, who in _servers(cfg)]
    return checks + _file_checks(cfg)


def add_arguments(ap) -> None:
    """``harp doctor`` options (shared ones, e.g. --profile, --params: :mod:`harp_lib.cli`)."""
    ap.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the LLM server")
    ap.add_argument("--no-server", action="store_true", help="skip the server probe")


def run(cfg: Config, args) -> int:
    checks = run_checks(cfg, timeout=args.timeout, servers=not args.no_server)
    print(f"harp doctor: profile {cfg.profile} ({cfg.root / 'params.yaml'})")
    for c in checks:
        print(c.line())
    bad = [c for c in checks if c.status == "missing" and c.required]
    print(f"{len(checks) - len(bad)} ok, {len(bad)} missing" + (" — fix the lines marked MISSING" if bad else ""))
    return 1 if bad else 0
