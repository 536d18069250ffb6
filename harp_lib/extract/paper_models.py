"""What every paper backend loads: the ONE table read by the loaders, ``harp doctor`` and
``harp fetch-weights``, plus the loader that turns any load failure into one clear error.

Each paper backend (``harp_lib.extract.paper_*``) is registered through :func:`paper_backend`,
which wraps its constructor: a missing package names the environment to create
(``scripts/make_env.sh <env>``); anything else that goes wrong while loading (weights not in
the cache, no token, a hub error, a corrupt checkpoint) becomes one :class:`BackendLoadError`
naming the checkpoints and the exact ``harp fetch-weights`` command.  ``BackendLoadError`` is a
``BackendError``: ``harp extract`` stops the run instead of quarantining every recording.

Runs are offline by default: :func:`offline_by_default` sets ``HF_HUB_OFFLINE=1`` when the user
did not set it (and remembers that harp set it, so messages say so truthfully).  Fetching is an
explicit, online step: ``harp fetch-weights --profile paper``.

This module imports nothing heavy (no numpy, torch or huggingface_hub at import).

>>> sorted(PAPER_MODELS)[:3]
['bge_small', 'clap', 'coughkit']
>>> PAPER_MODELS["clap"].env
'clap'
>>> [w.ident for w in PAPER_MODELS["diarization_pyannote"].weights]
['pyannote/speaker-diarization-community-1']
"""
from __future__ import annotations

import functools
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from harp_lib.config import BackendError

__all__ = ["Weight", "PaperModel", "PAPER_MODELS", "BACKEND_KEYS", "BackendLoadError", "paper_backend",
           "offline_by_default", "hub_offline", "whisper_cache", "hf_cache_dir", "hf_cached",
           "weights_for", "fetch_command", "ENVS", "env_python", "OFFLINE_MARK"]

#: Set (to "1") by :func:`offline_by_default` when harp, not the user, turned HF_HUB_OFFLINE on.
OFFLINE_MARK = "HARP_SET_HF_HUB_OFFLINE"

#: Environments created by scripts/make_env.sh (target -> what runs there).
ENVS = {
    "paper": "main environment + .[paper] (stage 2: emotion2vec, WavLM SER, CSER, MERT, music aesthetics)",
    "pyannote": "torch 2.9.1 + pyannote.audio 4.0.7 + whisper + openbeats (stage 1 of the paper profile)",
    "clap": "torch 2.14.1 + torchvision + numpy<2 + laion-clap 1.1.7",
}


@dataclass(frozen=True)
class Weight:
    """One checkpoint.  kind: ``hf`` (a Hugging Face repo, optionally only ``files``),
    ``whisper`` (openai-whisper model name, in :func:`whisper_cache`), ``env_file`` (a file
    named by an environment variable, e.g. HARP_CSER_CKPT; ``repo`` says where it is released)."""
    kind: str
    ident: str
    gated: bool = False
    files: tuple[str, ...] = ()
    repo: str = ""

    @property
    def label(self) -> str:
        if self.kind == "whisper":
            return f"whisper:{self.ident}"
        if self.kind == "hf" and self.files:
            return f"{self.ident}/{','.join(self.files)}"
        return self.ident


@dataclass(frozen=True)
class PaperModel:
    """A paper backend: registry stages, the modules it imports, the env it runs in, its weights."""
    name: str
    stages: tuple[str, ...]             # params.yaml extract.backends keys (labelers, not labeler)
    backend: str                        # registry name
    env: str                            # scripts/make_env.sh target
    packages: tuple[str, ...]
    weights: tuple[Weight, ...] = ()
    note: str = ""
    install: str = ""                   # how to install when not a make_env target (coughkit)


_PYANNOTE_DIAR = Weight("hf", "pyannote/speaker-diarization-community-1", gated=True)
_MERT = Weight("hf", "m-a-p/MERT-v1-95M")

#: key -> PaperModel.  Keys are unique; BACKEND_KEYS maps (params stage, backend name) to a key.
PAPER_MODELS: dict[str, PaperModel] = {m.name: m for m in [
    # pyannote's community-1 pipeline bundles its segmentation and embedding models: the gated
    # pyannote/segmentation-3.0 is never loaded.
    PaperModel("diarization_pyannote", ("diarization", "vad"), "pyannote", "pyannote",
               ("pyannote.audio", "torch"), (_PYANNOTE_DIAR,)),
    PaperModel("pyannote_embedding", ("audio_emb",), "pyannote_embedding", "pyannote",
               ("pyannote.audio", "torch"), (Weight("hf", "pyannote/embedding", gated=True),)),
    PaperModel("whisper", ("asr",), "whisper", "pyannote", ("whisper", "torch"),
               (Weight("whisper", "large-v3-turbo"),)),
    PaperModel("bge_small", ("text_emb",), "bge_small", "pyannote", ("sentence_transformers",),
               (Weight("hf", "BAAI/bge-small-en-v1.5"),)),
    PaperModel("openbeats", ("audio_emb",), "openbeats", "pyannote", ("openbeats.model", "torchaudio"),
               (Weight("hf", "espnet/OpenBEATS-Large-i2-as20k"),)),
    PaperModel("mert", ("song_boundaries", "domain_emb"), "mert", "paper",
               ("torch", "transformers", "ruptures"), (_MERT,)),
    # laion_clap builds the bert/roberta/bart tokenizers at import and roberta-base in its
    # constructor; its checkpoint is read from the HF cache (laion_clap itself would wget it).
    PaperModel("clap", ("audio_emb",), "clap", "clap", ("laion_clap", "torchvision"),
               (Weight("hf", "lukewys/laion_clap", files=("630k-audioset-best.pt",)),
                Weight("hf", "roberta-base"),
                Weight("hf", "bert-base-uncased", files=("tokenizer.json", "tokenizer_config.json",
                                                                     "vocab.txt", "config.json")),
                Weight("hf", "facebook/bart-base", files=("vocab.json", "merges.txt", "config.json",
                                                          "tokenizer.json", "tokenizer_config.json"))),
               note="or HARP_CLAP_CKPT=/path/630k-audioset-best.pt"),
    PaperModel("emotion2vec", ("domain_emb",), "emotion2vec", "paper", ("funasr",),
               (Weight("hf", "emotion2vec/emotion2vec_base"),)),
    PaperModel("wavlm_ser", ("labelers",), "wavlm_ser", "paper", ("torch", "transformers"),
               (Weight("hf", "3loi/SER-Odyssey-Baseline-WavLM-Categorical"),)),
    PaperModel("cser", ("labelers",), "cser", "paper", ("torch", "transformers"),
               (Weight("hf", "microsoft/wavlm-large"),
                Weight("env_file", "HARP_CSER_CKPT", repo="cjli/harp", files=("epoch_200.pt",)))),
    PaperModel("coughkit", ("labelers",), "coughkit", "paper", ("coughkit",), (),
               note="XGBoost model bundled with the package",
               install="git clone https://github.com/bagustris/coughkit && <env>/bin/pip install -e coughkit "
                       "(not on PyPI; see docs/environments.md)"),
    PaperModel("music_aesthetics", ("labelers",), "music_aesthetics", "paper",
               ("torch", "transformers", "huggingface_hub"),
               (Weight("hf", "laion/music-whisper"),
                Weight("hf", "laion/music-aesthetics",
                       files=("stage1_bottleneck.pt", "expert_Naturalness.pt", "expert_Clarity.pt",
                              "expert_Musicality.pt", "expert_Coherence.pt", "expert_Memorability.pt")))),
]}

#: (params.yaml extract.backends stage, backend name) -> PAPER_MODELS key.
BACKEND_KEYS: dict[tuple[str, str], str] = {(s, m.backend): k for k, m in PAPER_MODELS.items() for s in m.stages}


# ------------------------------------------------------------------------- caches
def hf_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The Hugging Face hub cache folder, as huggingface_hub resolves it."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"])
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]) / "hub"
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def hf_cached(repo_id: str, env: Mapping[str, str] = os.environ, files: tuple[str, ...] = ()) -> Optional[Path]:
    """The newest snapshot folder of ``repo_id`` holding files (all of ``files`` if given), or None."""
    snaps = hf_cache_dir(env) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
    if not snaps.is_dir():
        return None
    full = [s for s in snaps.iterdir() if s.is_dir() and any(s.iterdir())
            and all((s / f).exists() for f in files)]
    return max(full, key=lambda s: s.stat().st_mtime) if full else None


def whisper_cache(env: Mapping[str, str] = os.environ) -> Path:
    """Where openai-whisper weights live: $WHISPER_CACHE, else $XDG_CACHE_HOME/whisper, else ~/.cache/whisper."""
    if env.get("WHISPER_CACHE"):
        return Path(env["WHISPER_CACHE"])
    return (Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache") / "whisper"


def weight_present(w: Weight, env: Mapping[str, str] = os.environ) -> Optional[str]:
    """Where ``w`` is on disk, or None."""
    if w.kind == "hf":
        snap = hf_cached(w.ident, env, w.files)
        return str(snap) if snap else None
    if w.kind == "whisper":
        f = whisper_cache(env) / f"{w.ident}.pt"
        return str(f) if f.is_file() else None
    if w.kind == "env_file":
        v = env.get(w.ident)
        return v if v and Path(v).is_file() else None
    raise ValueError(f"unknown weight kind {w.kind!r}")


def weights_for(backends: Mapping) -> list[tuple[str, str, PaperModel]]:
    """(stage, backend, PaperModel) for every paper backend in ``extract.backends``
    (values: name | {domain: name | [names] | null} | [names]); offline backends are skipped."""
    out = []
    for stage, val in backends.items():
        vals = val.values() if isinstance(val, Mapping) else [val]
        for v in vals:
            for spec in (v if isinstance(v, (list, tuple)) else [v]):
                name = spec.get("name") if isinstance(spec, Mapping) else spec
                key = BACKEND_KEYS.get((stage, str(name))) if name else None
                if key and (stage, str(name), PAPER_MODELS[key]) not in out:
                    out.append((stage, str(name), PAPER_MODELS[key]))
    return sorted(out, key=lambda t: (t[0], t[1]))


# ------------------------------------------------------------------------- offline mode
def hub_offline(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off")


def offline_by_default() -> None:
    """Turn HF_HUB_OFFLINE on for this run unless the user set it (either way); remember that
    harp did it, so the missing-weights message does not claim the user set it."""
    if "HF_HUB_OFFLINE" not in os.environ:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ[OFFLINE_MARK] = "1"


def _offline_phrase() -> str:
    if not hub_offline():
        return ""
    if os.environ.get(OFFLINE_MARK) == "1":
        return "harp runs offline by default (it set HF_HUB_OFFLINE=1 because it was unset)"
    return f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')} is set in your environment"


def fetch_command(m: PaperModel) -> str:
    return f"harp fetch-weights --backend {m.name}"


def env_python(env_name: str, root: Optional[Path] = None) -> Path:
    """The interpreter of a separate environment: $HARP_ENV_<NAME> or <repo>/.envs/<name>."""
    override = os.environ.get(f"HARP_ENV_{env_name.upper()}")
    base = Path(override) if override else (root or Path(__file__).resolve().parents[2]) / ".envs" / env_name
    return base / "bin" / "python"


def _env_hint(m: PaperModel) -> str:
    if m.install:
        return f"Install it: {m.install}"
    if m.env == "paper":
        return ("It runs in the main environment with the paper extras: `scripts/make_env.sh paper .venv` "
                "(or a fresh `scripts/make_env.sh paper`; docs/environments.md)")
    return (f"It runs in its own environment ({ENVS[m.env]}): create it with `scripts/make_env.sh {m.env}` "
            f"and run this step with `.envs/{m.env}/bin/harp ...` (docs/environments.md)")


def _one_line(e: BaseException, n: int = 240) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:n]}"


class BackendLoadError(BackendError):
    """A paper backend could not be loaded (package, weights, token, checkpoint).  It is not a
    bad recording: ``harp extract`` stops the run on it instead of quarantining."""


def missing_package_error(what: str, m: PaperModel, module: str, err: BaseException) -> BackendLoadError:
    return BackendLoadError(f"{what} needs the Python package '{module}', which is not importable in this "
                            f"environment ({sys.executable}; {_one_line(err, 160)}). {_env_hint(m)}.")


def load_error(what: str, m: PaperModel, err: BaseException) -> BackendLoadError:
    """One message for any failure while loading ``m``'s weights."""
    missing = [w.label for w in m.weights if not weight_present(w)]
    where = (f"not on disk: {', '.join(missing)} (HF cache {hf_cache_dir()}, whisper cache {whisper_cache()})"
             if missing else "its weights are on disk but failed to load")
    gated = [w.ident for w in m.weights if w.gated]
    steps = [f"fetch them once with network access: `{fetch_command(m)}` (or `harp fetch-weights --profile paper` "
             f"for every model of the profile; it uses the `hf` client and honours HF_HOME / WHISPER_CACHE)"]
    if gated:
        steps.append(f"{', '.join(gated)} {'is' if len(gated) == 1 else 'are'} gated: accept the licence on "
                     f"huggingface.co and set HF_TOKEN (or `hf auth login`) first")
    off = _offline_phrase()
    if off:
        steps.append(f"{off}; weights are never downloaded during a run")
    if m.note:
        steps.append(m.note)
    return BackendLoadError(f"{what} cannot be loaded ({_one_line(err)}); {where}. "
                            + "; ".join(steps) + ".")


def require(module: str, m: PaperModel, what: str):
    """Import ``module``; a missing package names the environment, any other import-time failure
    (e.g. laion_clap reaching the hub at import) is a load error."""
    try:
        return importlib.import_module(module)
    except ImportError as e:   # not installed, or installed against another torch (ABI)
        raise missing_package_error(what, m, module, e) from None
    except OSError as e:
        if ".so" in str(e) or "undefined symbol" in str(e):   # e.g. torchaudio built for another torch
            raise missing_package_error(what, m, module, e) from None
        raise load_error(what, m, e) from None
    except BackendError:
        raise
    except Exception as e:  # noqa: BLE001 - a package that fails while importing (hub, ABI)
        raise load_error(what, m, e) from None


def paper_backend(key: str):
    """Class decorator: every construction of the backend goes through this loader.

    Any exception from ``__init__`` that is not already a BackendLoadError becomes one
    (a plain BackendError keeps its text but gains the type, so the run stops)."""
    m = PAPER_MODELS[key]

    def wrap(cls):
        init = cls.__init__
        what = f"paper backend '{m.backend}' ({'/'.join(m.stages)})"

        @functools.wraps(init)
        def __init__(self, *a, **k):
            try:
                init(self, *a, **k)
            except BackendLoadError:
                raise
            except BackendError as e:
                raise BackendLoadError(str(e)) from None
            except Exception as e:  # noqa: BLE001 - OSError, HTTP, pickle, CUDA ... : one message
                raise load_error(what, m, e) from None
        cls.__init__ = __init__
        cls.paper_model = m
        return cls
    return wrap
