"""One LongEmo episode while it is built: its recording (:meth:`_Episode.write_recording`),
ground-truth segments (:meth:`_Episode.ground_truth`, :func:`_gt_segment`), reference clips
(:class:`_Clips`, speaker and emotion clips) and the queries it collects (:meth:`_Episode.add`)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from harp_lib.core.labels import CODE_TO_EMOTION
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.core.timespan import Span
from harp_lib.corpora.datasets.common import copy_recording, cut_clip
from harp_lib.corpora.datasets.longemo_candidates import _single, dominant_speaker
from harp_lib.corpora.datasets.longemo_params import EmotionParams
from harp_lib.corpora.datasets.longemo_source import LongEmoSource


def _name(code: str) -> Optional[str]:
    return CODE_TO_EMOTION.get(code)


def _votes_named(votes: dict) -> dict:
    return {(_name(k) or k): v for k, v in votes.items()}


@dataclass
class _Clips:
    """Reference clips chosen and cut on demand (numbered in first-use order)."""
    out: Path
    sr: int
    made: dict

    def get(self, kind: str, src: Path, t0: float, t1: float) -> str:
        key = (kind, str(src), round(t0, 3), round(t1, 3))
        if key not in self.made:
            rel = f"references/{kind}_{sum(k[0] == kind for k in self.made) + 1:04d}.wav"
            cut_clip(src, Span(t0, t1), self.out / rel, self.sr)
            self.made[key] = rel
        return self.made[key]



@dataclass
class _Episode:
    """One episode while its queries are written: its recording, ground truth and reference clips."""
    ep: str
    source: LongEmoSource
    p: EmotionParams
    out: Path
    clips: _Clips
    spk_clips: dict
    emo_clips: dict
    segs: list
    queries: list
    skipped: Counter
    gt: dict = field(default_factory=dict)
    k: Counter = field(default_factory=Counter)
    dur: float = 0.0
    lo: float = 0.0
    hi: float = 0.0

    def write_recording(self, conv) -> Recording:
        """Copy the episode's audio; sets ``dur`` and the conversation's window ``lo``..``hi``."""
        p, ep = self.p, self.ep
        ext = ".wav" if p.audio == "convert" else ".flac"
        rel = f"recordings/{ep}{ext}"
        self.dur = dur = copy_recording(self.source.flac(ep), self.out / rel, p.sample_rate, mode=p.audio)
        self.lo = conv[1] if conv else 0.0
        self.hi = min(dur, conv[2]) if conv and conv[2] else dur
        return Recording(ep, "emotion", rel, dur, p.sample_rate,
                         custom={"conversation": conv[0] if conv else None,
                                 "conversation_offset": conv[1] if conv else None})

    def ground_truth(self, times: dict, ep_labels: dict) -> dict[str, Segment]:
        """Ground-truth segments: NaturalVoices turns, with human labels where annotated."""
        ep, segs, dur, gt = self.ep, self.segs, self.dur, self.gt
        for s in segs:
            if s["start"] >= dur:
                continue
            gt[s["n"]] = _gt_segment(ep, s["n"], s["start"], min(s["end"], dur), _single(s) or
                                     (",".join(s["global_speaker2"]) or None), s.get("text", ""),
                                     ep_labels.get(s["n"]), s)
        for n, (t0, t1) in times.items():
            if n in ep_labels and t0 < dur:
                old = gt.get(n)
                spk = old.speaker if old else dominant_speaker(segs, t0, t1, self.p.st_spk_share)
                text = self.source.transcript(ep_labels[n]["utterance"]) or (old.text if old else "")
                raw = next((s for s in segs if s["n"] == n), None)
                gt[n] = _gt_segment(ep, n, t0, min(t1, dur), spk, text, ep_labels[n], raw)
        return gt

    def gt_ids(self, t0, t1, spk=None, nearest=False) -> tuple:
        hits = [g for g in self.gt.values() if g.start < t1 and g.end > t0 and (spk is None or g.speaker == spk)]
        if nearest and hits:
            hits = [min(hits, key=lambda g: (abs(g.start - t0), g.id))]
        return tuple(sorted(g.id for g in hits))

    def spk_clip(self, spk, t0, t1) -> Optional[str]:
        gender = next((s.get("gender") for s in self.segs if _single(s) == spk and s.get("gender")), None)
        opts = [c for c in self.spk_clips.get(spk, []) if not (c[1] == self.ep and c[2] < t1 and c[3] > t0)]
        if not opts:
            return None
        opts.sort(key=lambda c: (c[1] == self.ep, c[4] != gender, -c[0], c[1], c[2]))
        c = opts[0]
        return self.clips.get("speaker", self.source.flac(c[1]), c[2], c[3])

    def emo_clip(self, e, rng) -> Optional[str]:
        pool = [c for c in self.emo_clips.get(e["code"], []) if c["spk"] != e["spk"] and c["ep"] != self.ep] or \
               [c for c in self.emo_clips.get(e["code"], []) if c["spk"] != e["spk"]]
        if not pool:
            return None
        key = np.array([e["cf"], e["act"], e["val"], e["dom"]])
        pool.sort(key=lambda c: (float(np.linalg.norm(np.array([c["cf"], c["act"], c["val"], c["dom"]]) - key)),
                                 c["ep"], c["t0"]))
        c = pool[int(rng.integers(min(3, len(pool))))]
        mid, half = (c["t0"] + c["t1"]) / 2, min(c["t1"] - c["t0"], self.p.emotion_clip_max_sec) / 2
        return self.clips.get("emotion", self.source.flac(c["ep"]), mid - half, mid + half)

    def add(self, qtype, **kw) -> None:
        self.k[qtype] += 1
        self.queries.append(Query(f"{self.ep}-{qtype}-{self.k[qtype]:02d}", "emotion", self.ep, qtype, **kw))



def _gt_segment(ep, n, t0, t1, spk, text, lab, raw) -> Segment:
    labels: dict = {}
    custom: dict = {"utterance": f"{ep}_{n}"}
    if lab:
        votes = _votes_named(lab["votes"])
        tot = sum(votes.values())
        if _name(lab["code"]):
            labels["primary"] = _name(lab["code"])
        if tot:
            labels["scores"] = {k: round(v / tot, 3) for k, v in votes.items()}
        labels.update(arousal=lab["act"], valence=lab["val"], dominance=lab["dom"])
        custom.update(label_source="consensus", emo_code=lab["code"], cf=lab["cf"], votes=votes)
    elif raw is not None and raw.get("arousal") is not None:
        labels.update(arousal=raw["arousal"], valence=raw["valence"], dominance=raw["dominance"])
        custom["label_source"] = "automatic"
    if raw is not None:
        custom.update(snr=raw.get("SNR"), num_speakers=raw.get("num_speakers"))
    return Segment(f"{ep}_{n}", ep, t0, max(t0, t1), spk, text or "", labels=labels, custom=custom)
