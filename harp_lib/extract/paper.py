"""The paper's extraction models (HARP_REFERENCE §2.2-2.3) as real loading code: the helpers
every paper backend shares (:func:`require`, :func:`hf_token`, :func:`hf_load`, device, resampling).

The backends themselves live one family per module: ``paper_pyannote`` (diarization, VAD,
speaker embedding), ``paper_mert`` (song boundaries, music embedding), ``paper_text`` (Whisper
ASR, bge-small text embedding), ``paper_audio`` (OpenBEATS, CLAP), ``paper_emotion`` (WavLM SER,
CSER, emotion2vec) and ``paper_clinical_music`` (CoughKit, music aesthetics).

They need optional packages, hub weights and sometimes tokens.  Libraries are imported only
when a backend is constructed, and every constructor goes through one loader
(:func:`harp_lib.extract.paper_models.paper_backend`): whatever goes wrong raises ONE
:class:`BackendLoadError` naming the environment to create (``scripts/make_env.sh <env>``) or the
``harp fetch-weights`` command to run; ``harp extract`` stops on it.  What each backend loads
is the table ``paper_models.PAPER_MODELS`` (also read by ``harp doctor`` and ``harp fetch-weights``).
pyannote.audio and laion-clap need their own environments (docs/environments.md).

>>> from harp_lib.config import create_backend
>>> try:
...     create_backend("asr", "whisper")
... except BackendLoadError as e:
...     print("BackendLoadError")
BackendLoadError
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from harp_lib.config import BackendError
from harp_lib.core.audio import resample
from harp_lib.extract.paper_models import PAPER_MODELS, BackendLoadError, hub_offline
from harp_lib.extract.paper_models import require as _require

__all__ = ["require", "hf_token", "hf_load", "BackendLoadError"]

#: backend registry name (and stage) -> PAPER_MODELS key, for the module-level helpers below
_KEY_OF = {"pyannote": "diarization_pyannote"}


def require(module: str, key: str, what: str):
    """Import ``module`` for the paper backend ``key`` (a PAPER_MODELS key) or raise a
    BackendLoadError naming the environment (``scripts/make_env.sh <env>``) it belongs in."""
    return _require(module, PAPER_MODELS[_KEY_OF.get(key, key)], what)


def hf_token(what: str) -> str:
    """The Hugging Face token from HF_TOKEN, $HF_HOME/token or ~/.cache/huggingface/token, or a clear error."""
    tok = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    home = Path(os.environ["HF_HOME"]) if os.environ.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    p = home / "token"
    if not tok and p.exists():
        tok = p.read_text().strip()
    if not tok:
        raise BackendLoadError(f"{what} uses a gated Hugging Face model: accept its licence on huggingface.co "
                               f"and set HF_TOKEN=<your token> (or run `hf auth login`).")
    return tok


def hf_load(what: str, fn, *args, **kwargs):
    """Call a ``from_pretrained``-style loader outside a paper backend's constructor (e.g. the
    Whisper baseline of ``harp bench``); any failure becomes one BackendError."""
    try:
        return fn(*args, **kwargs)
    except BackendError:
        raise
    except Exception as e:  # noqa: BLE001 - OSError / LocalEntryNotFoundError / HTTP errors
        detail = " ".join(str(e).split())[:200]
        hint = ("offline mode is on (HF_HUB_OFFLINE) and the weights are not in the local cache: "
                f"`hf download {what.split()[-1]}` once with network access, or set HF_HOME to a cache "
                "that has them" if hub_offline() else
                "check network access to huggingface.co, HF_TOKEN for gated models, or set HF_HOME")
        raise BackendError(f"{what}: cannot load weights ({type(e).__name__}: {detail}); {hint}.") from None


def _device(torch) -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _resample(wave: np.ndarray, sr: int, target: int) -> np.ndarray:
    return resample(np.asarray(wave, np.float32), sr, target)
