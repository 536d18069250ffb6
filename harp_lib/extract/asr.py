"""Offline ASR: pocketsphinx 5 (US-English acoustic model, LM and dictionary in the wheel).

Measures: the words spoken, with word start/end times (10 ms frames).  Limits: a small
read-speech model; WER ~0.1-0.3 on clean synthetic voices, much worse on spontaneous phone
speech; no punctuation or casing.  Fast settings (``maxhmmpf=3000``, no flat-lexicon pass).
Only speech regions are decoded (VAD-gated), so music and silence cost nothing.

Usage (``wave``: 16 kHz float32 speech; tests/extract/test_asr_state.py runs it on real speech)::

    create_backend("asr", "pocketsphinx").transcribe(wave, 16000)
    # {'text': 'hello there', 'words': [['hello', 0.15, 0.51], ['there', 0.52, 0.82]]}
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.core.timespan import Span

__all__ = ["PocketsphinxASR"]

_SKIP = {"<s>", "</s>", "<sil>", "[NOISE]", "<unk>"}


@register("asr", "pocketsphinx")
class PocketsphinxASR:
    """pocketsphinx decoder with word times; see module doc."""
    name = "pocketsphinx"
    model_id = "pocketsphinx-5.1.1 en-us (cmusphinx-en-us-ptm + en-us.lm.bin)"

    def __init__(self, maxhmmpf: int = 3000, fwdflat: bool = False, bestpath: bool = True,
                 min_region_sec: float = 0.3, region_pad_sec: float = 0.1, **decoder_options):
        try:
            from pocketsphinx import Decoder  # heavy: pocketsphinx, only for its backend
        except ImportError as e:  # pragma: no cover
            raise BackendError("asr 'pocketsphinx' needs the pocketsphinx package") from e
        try:
            self.decoder = Decoder(samprate=16000, maxhmmpf=maxhmmpf, fwdflat=fwdflat,
                                   bestpath=bestpath, loglevel="FATAL", **decoder_options)
        except (KeyError, ValueError, RuntimeError) as e:
            raise BackendError(f"asr 'pocketsphinx': bad decoder option in {sorted(decoder_options)}: {e} "
                               f"(see extract.options.pocketsphinx in params.yaml)") from e
        self.min_region_sec, self.region_pad_sec = min_region_sec, region_pad_sec
        # the decoder's feature state (live CMN, ...) adapts across utterances: every segment
        # restarts from the initial state (reinit_feat + initial CMN, ~0 s), so a transcript never
        # depends on what this process decoded before (with extract.workers > 1 the
        # recording-to-worker assignment varies between runs)
        self._cmn_init = self.decoder.get_cmn()

    def _decode(self, pcm: np.ndarray, offset: float) -> list[list]:
        d = self.decoder
        d.start_utt()
        d.process_raw(pcm.tobytes(), full_utt=True)
        d.end_utt()
        words = []
        if d.hyp() is None:
            return words
        for s in d.seg():
            w = s.word
            if w in _SKIP or w.startswith("++") or w.startswith("["):
                continue
            if w.endswith(")") and "(" in w:
                w = w[: w.index("(")]
            words.append([w, round(offset + s.start_frame / 100, 3), round(offset + (s.end_frame + 1) / 100, 3)])
        return words

    def transcribe(self, wave: np.ndarray, sr: int = 16000,
                   speech: Optional[Sequence[Span]] = None) -> dict:
        """``{"text", "words": [[word, start, end], ...]}`` for one segment.

        ``speech`` (segment-relative spans) restricts decoding to those regions; an empty
        list means "no speech here" and returns empty text without decoding.
        """
        if sr != 16000:
            raise BackendError(f"pocketsphinx expects 16 kHz audio, got {sr} Hz")
        wave = np.asarray(wave, dtype=np.float32)
        dur = len(wave) / sr
        regions = [Span(0.0, dur)] if speech is None else list(speech)
        # merge regions closer than the padding, pad them, drop crumbs
        merged: list[list[float]] = []
        for sp in sorted(regions, key=lambda s: s.start):
            s, e = max(0.0, sp.start - self.region_pad_sec), min(dur, sp.end + self.region_pad_sec)
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        pcm16 = (np.clip(wave, -1, 1) * 32767).astype(np.int16)
        self.decoder.reinit_feat()
        self.decoder.set_cmn(self._cmn_init)
        words: list[list] = []
        for s, e in merged:
            if e - s < self.min_region_sec:
                continue
            words += self._decode(pcm16[int(s * sr): int(e * sr)], s)
        return {"text": " ".join(w[0] for w in words), "words": words}
