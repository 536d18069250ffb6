"""What goes to a model and what comes back: the parts of a user turn and the reply.

A turn is a sequence of *parts* (:data:`Part`): plain strings and :class:`AudioPart` clips.
:func:`build_messages` turns them into one OpenAI chat user message (a text block per string; per
clip a text block with its label, then an ``input_audio`` block ``{"data": <base64 wav>,
"format": "wav"}`` from :func:`wav_base64`).  :class:`LLMResponse` is a reply with what produced
it; :func:`request_hash` is the reply-cache key of a request.

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
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

from harp_lib.core import audio

__all__ = ["Part", "AudioPart", "LLMResponse", "wav_base64", "request_hash", "audio_seconds", "build_messages"]

Part = Union[str, "AudioPart"]


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

