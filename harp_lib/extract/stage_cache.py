"""The extraction cache's files and keys (stage 1 and 2 of :mod:`harp_lib.extract.pipeline`).

The writers every stage uses (JSON with sorted keys, float32 ``.npy``, both atomic), the
spaces a segment's vectors live in, and the keys under which a cached stage stays valid:
:func:`stage1_key` (``done.json``) and :func:`stage2_key` (``stage2.json``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.core.atomic import write_json, write_npy
from harp_lib.extract.settings import backend_model_id

__all__ = ["SPACES", "stage1_key", "stage2_key"]

SPACES = ("text", "audio", "domain")


# ------------------------------------------------------------------------- helpers
def _name(spec) -> Optional[str]:
    return None if spec is None else (spec["name"] if isinstance(spec, dict) else spec)


def _write_json(path: Path, obj) -> None:
    write_json(path, obj, indent=1, sort_keys=True)


def _write_npy(path: Path, arr: np.ndarray) -> None:
    write_npy(path, arr, dtype=np.float32)


def _read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------- keys
def stage1_key(st: dict, audio_sha256: Optional[str]) -> dict:
    """What stage 1's outputs depend on: the audio's content, every stage-1 setting with its
    options (not the recording id, not only the backend names) and the ASR's ``model_id``."""
    return _as_json({"audio_sha256": audio_sha256, "sr": st["sr"], "segmenter": st["segmenter"],
                     **{k: st[k] for k in ("vad", "segment", "asr", "text_emb", "audio_emb")},
                     # only when on: caches made without an overlap backend stay valid
                     **({"overlap": st["overlap"]} if st.get("overlap") is not None else {}),
                     # the weights and package versions behind the transcript (whisper_ct2: model + versions)
                     "asr_model": backend_model_id("asr", st["asr"]),
                     "max_seg_sec": st["max_seg_sec"], "min_turn_sec": st["min_turn_sec"],
                     "fill_gaps_sec": st["fill_gaps_sec"]})


def stage2_key(st: dict, audio_sha256: Optional[str]) -> dict:
    """What stage 2's outputs depend on besides stage 1: labelers and domain embedder with options."""
    return _as_json({"audio_sha256": audio_sha256, "labelers": st["labelers"], "domain_emb": st["domain_emb"]})


def _as_json(obj):
    """``obj`` as it reads back from JSON (tuples become lists), so a stored key compares equal."""
    return json.loads(json.dumps(obj, sort_keys=True))
