"""Symptom keyword spotting that survives ASR errors (clinical domain, HARP stage 2).

The large-vocabulary recogniser often mishears the few words that decide a *reported
symptom* question ("it costs" for "coughs").  :class:`SymptomKWSLabeler` searches each
segment's audio a second time with pocketsphinx's keyphrase spotting (KWS) for a small
clinical vocabulary (:data:`KEYPHRASES`), which only has to decide "was this phrase said
here", not to pick it out of a 130k-word language model.  Each spotted phrase maps to a
canonical symptom (``cough``, ``sore throat``, ``shortness of breath``, ``wheezing``,
``chest tightness``, ``runny nose``, ``sneezing``, ``congestion``) stored in the segment
labels as ``symptoms`` (sorted, unique), with ``symptom_hits`` = ``[[phrase, start, end], ...]``
(absolute seconds) for citations.

Negated mentions and the doctor's questions are not reports: when the segment's transcript
holds a negation cue (:data:`NEGATION_CUES`) or opens like a question (:data:`QUESTION_OPENERS`),
its hits are kept in ``symptom_hits`` but ``symptoms`` stays empty and ``symptoms_negated``
lists them.  Limits: the cue check reads the (error-prone) transcript; KWS has false alarms
on acoustically similar phrases (thresholds per phrase in :data:`KEYPHRASES`; hits on a
cough burst (:func:`~harp_lib.extract.cough_labeler.detect_coughs`) are dropped, since a real cough
is spotted as the word); symptoms
outside the vocabulary are not found.

>>> SYMPTOM_OF["coughing"], SYMPTOM_OF["out of breath"]
('cough', 'shortness of breath')
"""
from __future__ import annotations

import os
import re
import tempfile
from typing import Optional, Sequence

import numpy as np

from harp_lib.config import BackendError, register
from harp_lib.extract.cough_labeler import ContentMemo, cached_detect_coughs

__all__ = ["KEYPHRASES", "SYMPTOM_OF", "NEGATION_CUES", "QUESTION_OPENERS", "SymptomKWSLabeler",
           "negated_or_question"]

#: keyphrase -> (canonical symptom, KWS threshold exponent: 1e-N; longer phrases need smaller N)
KEYPHRASES: dict[str, tuple[str, int]] = {
    "cough": ("cough", 10), "coughs": ("cough", 10), "coughing": ("cough", 15),
    "sore throat": ("sore throat", 20), "my throat": ("sore throat", 15), "his throat": ("sore throat", 15),
    "short of breath": ("shortness of breath", 20), "out of breath": ("shortness of breath", 20),
    "wheezing": ("wheezing", 15), "chest feels tight": ("chest tightness", 20),
    "runny nose": ("runny nose", 20), "nose keeps running": ("runny nose", 25),
    "sneezing": ("sneezing", 15), "blocked up": ("congestion", 15),
}
SYMPTOM_OF = {k: v[0] for k, v in KEYPHRASES.items()}
NEGATION_CUES = ("no", "not", "nothing", "never", "don't", "without", "none")
QUESTION_OPENERS = ("any", "have you", "do you", "did you", "are you", "is there", "has he", "has she")


def negated_or_question(text: str) -> bool:
    """True when a transcript denies something or opens like a question.

    >>> negated_or_question("no no cough at all my chest is fine"), negated_or_question("i keep coughing")
    (True, False)
    """
    low = re.sub(r"[^a-z' ]+", " ", (text or "").lower()).split()
    if any(w in NEGATION_CUES for w in low):
        return True
    head = " ".join(low[:3])
    return any(head == q or head.startswith(q + " ") for q in QUESTION_OPENERS)


@register("labeler", "symptom_kws")
class SymptomKWSLabeler:
    """pocketsphinx keyphrase spotting of :data:`KEYPHRASES` per segment; see module doc."""
    name = "symptom_kws"
    segment_independent = True   # each clip is spotted on its own (label_turns may split the turns)
    model_id = "pocketsphinx-5.1.1 en-us KWS (keyphrase list v1) + transcript negation/question cue"

    def __init__(self, threshold_scale: int = -5, keyphrases: Optional[dict] = None, skip_coughs: bool = True):
        try:
            from pocketsphinx import Decoder  # heavy: pocketsphinx, only for its backend
        except ImportError as e:  # pragma: no cover
            raise BackendError("labeler 'symptom_kws' needs the pocketsphinx package") from e
        self.keyphrases = {k: (v[0], int(v[1])) for k, v in (keyphrases or KEYPHRASES).items()}
        self.skip_coughs = skip_coughs
        lines = [f"{k} /1e-{max(1, t + threshold_scale)}/" for k, (_, t) in sorted(self.keyphrases.items())]
        fd, self._kws_path = tempfile.mkstemp(prefix="harp_kws_", suffix=".txt")
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        self.decoder = Decoder(samprate=16000, loglevel="FATAL", kws=self._kws_path)
        os.unlink(self._kws_path)
        self._cmn_init = self.decoder.get_cmn()
        self._memo = ContentMemo()       # spot() results per clip content

    def spot(self, wave: np.ndarray, sr: int = 16000) -> list[list]:
        """``[[phrase, start, end], ...]`` (seconds from the clip start) spotted in ``wave``
        (memoised per clip content: a clip heard again is not decoded again)."""
        if sr != 16000:
            raise BackendError(f"symptom_kws expects 16 kHz audio, got {sr} Hz")
        return [list(h) for h in self._memo.get(wave, (int(sr),), lambda: self._spot(wave, sr))]

    def _spot(self, wave: np.ndarray, sr: int) -> list[list]:
        w = np.asarray(wave, dtype=np.float32)
        if len(w) < int(0.2 * sr):
            return []
        d = self.decoder
        d.reinit_feat()
        d.set_cmn(self._cmn_init)
        d.start_utt()
        d.process_raw((np.clip(w, -1, 1) * 32767).astype(np.int16).tobytes(), full_utt=True)
        d.end_utt()
        if d.hyp() is None:
            return []
        hits = [[s.word.strip(), round(s.start_frame / 100, 3), round((s.end_frame + 1) / 100, 3)]
                for s in d.seg() if s.word.strip() in self.keyphrases]
        if hits and self.skip_coughs:
            # a real cough sound is "heard" as the word cough: hits on a cough burst are dropped
            bursts = cached_detect_coughs(w, sr)
            hits = [h for h in hits if not any(h[1] < e + 0.2 and s - 0.2 < h[2] for s, e in bursts)]
        return hits

    def _pack(self, hits: list, text: str, offset: float) -> dict:
        syms = sorted({self.keyphrases[h[0]][0] for h in hits})
        hits = [[h[0], round(h[1] + offset, 3), round(h[2] + offset, 3)] for h in hits]
        if syms and negated_or_question(text):
            return {"symptoms": [], "symptoms_negated": syms, "symptom_hits": hits}
        return {"symptoms": syms, "symptoms_negated": [], "symptom_hits": hits}

    def label(self, wave, sr=16000, *, text="", speaker=None, context=None) -> dict:
        return self._pack(self.spot(wave, sr), text, float((context or {}).get("offset", 0.0)))

    #: audio before each segment handed to :meth:`label_recording` (the cough check needs history)
    pad_sec = 0.3

    def label_recording(self, waves: Sequence[np.ndarray], sr: int, texts: Sequence[str],
                        speakers, tags=None, offsets=None, pads=None) -> list[dict]:
        """``waves[i]`` may start ``pads[i]`` s before its segment; hits whose middle lies in
        that pad belong to the previous segment and are dropped.  ``offsets[i]``: the absolute
        time of ``waves[i]``'s first sample (hit times are stored absolute)."""
        offsets = offsets if offsets is not None else [0.0] * len(waves)
        pads = pads if pads is not None else [0.0] * len(waves)
        out = []
        for w, t, o, p in zip(waves, texts, offsets, pads):
            hits = [h for h in self.spot(w, sr) if (h[1] + h[2]) / 2 >= p - 1e-6]
            out.append(self._pack(hits, t, o))
        return out
