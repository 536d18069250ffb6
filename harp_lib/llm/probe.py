"""``harp llm-probe``: does an OpenAI-compatible server hear the whole audio clip?
(:func:`probe_audio_seconds` sends test clips of several lengths; the prompt tokens must grow
linearly with the clip length.)"""
from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from harp_lib.llm.messages import AudioPart
from harp_lib.llm.openai_compat import OpenAICompatClient

__all__ = ["probe_audio_seconds", "add_arguments", "run"]


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
