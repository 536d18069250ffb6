"""LongEmo: the paper's emotion domain from MSP-Podcast v2.0 + MSP-Conversation v2.0 + NaturalVoices.

All three corpora are licence-gated and unpacked by hand under ``datasets.emotion.src``::

    all_data.json                              NaturalVoices: {episode: [segments] | {seg_id: segment}}
                                               with start, end, text, global_speaker2, num_speakers,
                                               speech_classification, SNR, gender, arousal/valence/dominance
    podcasts_flac/MSP-PODCAST_DDDD.flac        NaturalVoices episode audio
    msp_podcast_v2.0/Labels/labels_consensus.csv   FileName, EmoClass, EmoAct, EmoVal, EmoDom, SpkrID, Gender
    msp_podcast_v2.0/Labels/labels_detailed.csv    FileName, EmoClass_Major (one row per annotator)
    msp_podcast_v2.0/Partitions.txt            "Train; MSP-PODCAST_0002_0005.wav"
    msp_podcast_v2.0/Transcripts/<utterance>.txt
    msp_conversation_v2.0/partitions.txt       "MSP-Conversation_0002;Test1"
    msp_conversation_v2.0/Time_Labels/conversations.txt        "MSP-Conversation_0002;offset;end"
    msp_conversation_v2.0/Time_Labels/conversation_parts.txt   "MSP-Conversation_0002_1;t0;t1"
    msp_conversation_v2.0/Time_Labels/segments.json  {utterance: {Conversation, Start_Time, End_Time}}
    msp_conversation_v2.0/Traces/{Arousal,Valence,Dominance}/<part>.csv   Central_Time, Mean, annotators

:func:`prepare_emotion` does what the paper's ``run_emotion.sh all`` does (HARP_REFERENCE §4.1),
deterministically and with the §7 bugs fixed: episodes = MSP-Conversation Test1 conversations with
few MSP-Podcast Train utterances; candidates ``st_event`` (consensus labels), ``ct_trend``
(continuous traces, NMS, one flat window per dimension) and ``multi_spk_window`` (speaker
comparison on the automatic AVD); stratified assignment (3 per type per episode); templates; GT
segments; ``query_id`` written at generation.  Emotion reference clips are the annotated
emotional utterances themselves (the paper cut the speaker's cleanest clip instead).

The paper phrases topics with ``Qwen/Qwen3.5-0.8B`` (:data:`PAPER_TOPIC_MODEL`); the default
here is a deterministic keyword extractor (:class:`KeywordTopics`), and any callable
``str -> str`` can be plugged in (``topic="qwen"`` loads the paper's model locally).
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Union

import numpy as np
from tqdm.auto import tqdm

from harp_lib.core.labels import CODE_TO_EMOTION
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.core.timespan import Span
from harp_lib.corpora.datasets.common import (STOPWORDS, Expected, SourceError, check_source, copy_recording, cut_clip,
                     require_source, rng_for, spoken_time, stratified_pick, words, write_corpus)

__all__ = ["EmotionParams", "LongEmoSource", "prepare_emotion", "emotion_expected", "KeywordTopics",
           "QwenTopics", "make_topic_generator", "PAPER_TOPIC_MODEL", "find_st_events",
           "find_ct_trends", "find_multi_spk_windows", "assign_candidates", "find_clusters"]

#: The paper's topic-phrase model (greedy, 20 new tokens, <= 200 characters of context).
PAPER_TOPIC_MODEL = "Qwen/Qwen3.5-0.8B"
MSP_URL = "https://www.lab-msp.com/MSP/MSP-Podcast.html (signed academic licence)"
MSPC_URL = "https://www.lab-msp.com/MSP/MSP-Conversation.html (signed academic licence)"
NV_URL = "NaturalVoices (MSP lab; signed licence): all_data.json and podcasts_flac/"
DIMS = ("Valence", "Arousal", "Dominance")
#: Consensus codes that never become a state/locate target (no agreement, "Other").
NON_TARGET_CODES = ("X", "O")


@dataclass(frozen=True)
class EmotionParams:
    """Knobs of LongEmo construction (params.yaml ``datasets.emotion``); defaults are the paper's."""
    src: str = "data/raw/longemo"
    podcast_dir: str = "msp_podcast_v2.0"
    conversation_dir: str = "msp_conversation_v2.0"
    episodes: Optional[tuple] = None   # explicit MSP-PODCAST ids; None = Test1 selection below
    max_train_utts: int = 10           # keep conversations with < 10 MSP-Podcast Train utterances ...
    max_train_ratio: float = 0.10      # ... and train/test1 ratio < 10 %
    st_min_cf: float = 0.5             # consensus confidence of st_event candidates
    st_spk_share: float = 0.5          # dominant-speaker share when SpkrID is missing
    st_context_sec: float = 60.0       # >= 2 same-speaker segments with text in the preceding 60 s
    st_context_min: int = 2
    ctx_sec: float = 20.0              # topic context: ±20 s, <= 300 characters a side
    ctx_chars: int = 300
    topic_chars: int = 200             # characters of context given to the topic generator
    ct_window_sec: float = 30.0        # trend windows: 30 s (two 15 s halves), step 10 s
    ct_step_sec: float = 10.0
    ct_min_delta: float = 0.08         # |mean(half2) - mean(half1)| on the trace / 100
    ct_spk_share: float = 0.7
    ct_nms_sec: float = 60.0           # NMS margin between trend windows (and flat windows)
    multi_window_sec: float = 60.0     # comparison windows: 60 s step 30 s
    multi_step_sec: float = 30.0
    multi_min_cover_sec: float = 10.0  # each speaker > 10 s of single-speaker speech
    multi_min_spread: float = 0.10
    cap_per_type: int = 3
    flat_slots: int = 1                # change slots reserved for a flat window (code: 1; doc said 2)
    comparison_pad_sec: float = 240.0  # 60 s window padded to 300 s, >= 10 s each side
    comparison_min_side_sec: float = 10.0
    locate_max_expand_sec: float = 150.0
    cluster_span_sec: float = 300.0    # locate_hard: >= 3 same-speaker same-emotion events in 300 s
    cluster_min_events: int = 3
    cluster_pad_sec: float = 30.0
    max_hard_per_episode: int = 3
    quote_min_words: int = 4
    quote_max_words: int = 12
    clip_min_sec: float = 3.0          # clean speaker clips: 3-8 s, SNR >= 20, single speaker
    clip_max_sec: float = 8.0
    clip_min_snr: float = 20.0
    clips_per_speaker: int = 5
    emotion_clips_per_code: int = 20
    emotion_clip_max_sec: float = 8.0
    time_round_sec: float = 30.0       # "around 3 and a half minutes"
    topic: str = "keywords"            # keywords | qwen (the paper's PAPER_TOPIC_MODEL, local weights)
    seed: int = 42
    sample_rate: int = 16000
    audio: str = "convert"             # convert (16 kHz mono WAV) | link (hard-link the FLAC)

    def __post_init__(self):
        if self.episodes is not None:
            object.__setattr__(self, "episodes", tuple(self.episodes))


def emotion_expected(p: EmotionParams) -> list[Expected]:
    pod, conv = p.podcast_dir, p.conversation_dir
    return [
        Expected("all_data.json", "NaturalVoices segments (about 1.7 GB)", NV_URL),
        Expected("podcasts_flac", "NaturalVoices episode audio", NV_URL, glob="*.flac"),
        Expected(f"{pod}/Labels/labels_consensus.csv", "MSP-Podcast v2.0 consensus labels", MSP_URL),
        Expected(f"{pod}/Labels/labels_detailed.csv", "MSP-Podcast v2.0 per-annotator labels", MSP_URL),
        Expected(f"{pod}/Partitions.txt", "MSP-Podcast v2.0 partitions", MSP_URL),
        Expected(f"{pod}/Transcripts", "MSP-Podcast v2.0 transcripts", MSP_URL, glob="*.txt"),
        Expected(f"{conv}/partitions.txt", "MSP-Conversation v2.0 partitions", MSPC_URL),
        Expected(f"{conv}/Time_Labels/conversations.txt", "MSP-Conversation offsets", MSPC_URL),
        Expected(f"{conv}/Time_Labels/conversation_parts.txt", "MSP-Conversation parts", MSPC_URL),
        Expected(f"{conv}/Time_Labels/segments.json", "MSP-Conversation utterance times", MSPC_URL),
        Expected(f"{conv}/Traces", "MSP-Conversation continuous traces", MSPC_URL, glob="*/*.csv"),
    ]


# ---------------------------------------------------------------------------------------
# Topic phrases (pluggable)
# ---------------------------------------------------------------------------------------
class KeywordTopics:
    """Deterministic topic phrase: the 3 most frequent content words of the context.

    >>> KeywordTopics()("the garden and the garden tools, roses in the garden need roses")
    'garden, roses and tools'
    """
    name = "keywords"

    def __init__(self, n_words: int = 3):
        self.n_words = n_words

    def __call__(self, context: str) -> str:
        toks = [w.strip("'-") for w in words(context)]
        toks = [w for w in toks if len(w) >= 3 and w not in STOPWORDS]
        if not toks:
            return "this topic"
        first = {w: i for i, w in reversed(list(enumerate(toks)))}
        top = sorted(Counter(toks).items(), key=lambda kv: (-kv[1], first[kv[0]]))[: self.n_words]
        ws = [w for w, _ in top]
        return ws[0] if len(ws) == 1 else ", ".join(ws[:-1]) + " and " + ws[-1]


class QwenTopics:
    """The paper's topic step: ``Qwen/Qwen3.5-0.8B``, greedy, 20 new tokens (local weights only)."""
    name = "qwen"

    def __init__(self, model_id: str = PAPER_TOPIC_MODEL, max_new_tokens: int = 20):
        from transformers import pipeline  # paper path; HF_HUB_OFFLINE=1 keeps it off the network
        self.model_id = model_id
        self.pipe = pipeline("text-generation", model=model_id, max_new_tokens=max_new_tokens,
                             do_sample=False)

    def __call__(self, context: str) -> str:
        msgs = [{"role": "system", "content": "Give a topic phrase (3-7 words) for what is being "
                 "discussed. Output only the phrase, nothing else."}, {"role": "user", "content": context}]
        prompt = self.pipe.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True,
                                                         enable_thinking=False)
        out = self.pipe(prompt, return_full_text=False)[0]["generated_text"]
        line = out.strip().strip("\"'.,: ").split("\n")[0].strip()
        return " ".join(line.split()[:7]) or "this topic"


def make_topic_generator(spec: Union[str, Callable[[str], str]]) -> Callable[[str], str]:
    """``"keywords"`` (default), ``"qwen"`` (paper) or any callable ``context -> phrase``."""
    if callable(spec):
        return spec
    if spec == "keywords":
        return KeywordTopics()
    if spec == "qwen":
        return QwenTopics()
    raise ValueError(f"unknown topic generator {spec!r}; use 'keywords', 'qwen' or a callable")


# ---------------------------------------------------------------------------------------
# Reading the sources
# ---------------------------------------------------------------------------------------
class _NanToNull(io.RawIOBase):
    """Byte stream that turns bare NaN / Infinity values (invalid JSON) into null for ijson.

    Only values (after ``:``, ``,`` or ``[``) are replaced, never text inside strings; the
    last bytes of each chunk are held back so a token split across reads is still seen whole.
    """
    _TOK = re.compile(rb"([:,\[]\s*)(?:-?Infinity|NaN)")
    _HOLD = 16

    def __init__(self, fh):
        self.fh, self.buf = fh, b""

    def readable(self):
        return True

    def readinto(self, b):
        while True:
            data = self.fh.read(max(len(b), self._HOLD * 2))
            chunk = self._TOK.sub(rb"\1null", self.buf + data)
            if not data:
                head, self.buf = chunk, b""
            else:
                head, self.buf = chunk[:-self._HOLD], chunk[-self._HOLD:]
            if head or not data:
                n = min(len(head), len(b))
                b[:n] = head[:n]
                self.buf = head[n:] + self.buf
                return n


def _utt_number(x) -> str:
    s = str(x)
    m = re.search(r"(\d+)(?:\.wav)?$", s)
    if not m:
        raise SourceError(f"cannot read an utterance number from {s!r}")
    return f"{int(m.group(1)):04d}"


def _episode_segments(value) -> list[dict]:
    if isinstance(value, dict) and "segments" in value:
        value = value["segments"]
    if isinstance(value, dict):
        rows = [dict(v, segment_id=v.get("segment_id", k)) for k, v in value.items()]
    else:
        rows = [dict(v, segment_id=v.get("segment_id", i + 1)) for i, v in enumerate(value)]
    out = []
    for r in rows:
        r["n"] = _utt_number(r["segment_id"])
        r["start"], r["end"] = float(r["start"]), float(r["end"])
        g = r.get("global_speaker2") or []
        r["global_speaker2"] = [str(x) for x in (g if isinstance(g, list) else [g])]
        for k in ("arousal", "valence", "dominance", "SNR"):
            v = r.get(k)
            r[k] = float(v) if isinstance(v, (int, float)) and math.isfinite(float(v)) else None
        out.append(r)
    return sorted(out, key=lambda r: (r["start"], r["n"]))


def iter_all_data(path) -> Iterator[tuple[str, list[dict]]]:
    """``(episode, segments)`` from NaturalVoices ``all_data.json``, streamed with ijson when present."""
    path = Path(path)
    try:
        import ijson
    except ImportError:
        ijson = None
    if ijson is None:
        # json accepts bare NaN; the whole file is held in memory (install ijson for 1.7 GB files)
        data = json.loads(path.read_text(encoding="utf-8"))
        for ep in sorted(data):
            yield ep, _episode_segments(data[ep])
        return
    with open(path, "rb") as fh:
        for ep, value in ijson.kvitems(io.BufferedReader(_NanToNull(fh)), "", use_float=True):
            yield ep, _episode_segments(value)


def _split_semicolon(path: Path) -> Iterator[list[str]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield [x.strip() for x in line.split(";")]


class LongEmoSource:
    """Reads the unpacked LongEmo sources.

    >>> # src = LongEmoSource("data/raw/longemo"); src.check()  -> [] when complete
    """

    def __init__(self, root, params: EmotionParams = EmotionParams()):
        self.root, self.params = Path(root), params
        self.pod = self.root / params.podcast_dir
        self.conv = self.root / params.conversation_dir

    def check(self) -> list[str]:
        return check_source(self.root, emotion_expected(self.params), "LongEmo")

    def flac(self, ep: str) -> Path:
        return self.root / "podcasts_flac" / f"{ep}.flac"

    def select_episodes(self) -> tuple[list[str], list[dict]]:
        """Test1 conversations with few Train utterances, as MSP-PODCAST ids; plus a log of all."""
        p = self.params
        test = {r[0] for r in _split_semicolon(self.conv / "partitions.txt") if len(r) >= 2 and r[1] == "Test1"}
        split = {}
        for r in _split_semicolon(self.pod / "Partitions.txt"):
            if len(r) >= 2:
                split[r[1].replace(".wav", "")] = r[0]
        seg_map = json.loads((self.conv / "Time_Labels/segments.json").read_text(encoding="utf-8"))
        n_train, n_test = Counter(), Counter()
        for utt, info in seg_map.items():
            c = info.get("Conversation")
            s = split.get(utt.replace(".wav", ""))
            if c in test:
                n_train[c] += s == "Train"
                n_test[c] += s == "Test1"
        keep, log = [], []
        for c in sorted(test):
            ratio = n_train[c] / n_test[c] if n_test[c] else math.inf
            ok = n_train[c] < p.max_train_utts and ratio < p.max_train_ratio
            log.append({"conversation": c, "train": n_train[c], "test1": n_test[c], "kept": ok})
            if ok:
                keep.append("MSP-PODCAST_" + c.split("_")[-1])
        if p.episodes is not None:
            keep = sorted(p.episodes)
        return keep, log

    def train_utterances(self) -> set[str]:
        return {r[1].replace(".wav", "") for r in _split_semicolon(self.pod / "Partitions.txt")
                if len(r) >= 2 and r[0] == "Train"}

    def consensus(self, episodes: set[str]) -> dict[str, dict[str, dict]]:
        """``{episode: {utterance number: label dict}}`` with votes from the detailed file."""
        name_to_code = {v: k for k, v in CODE_TO_EMOTION.items()} | {"Other": "O", "No agreement": "X"}
        out: dict[str, dict[str, dict]] = defaultdict(dict)
        path = self.pod / "Labels/labels_consensus.csv"
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                fn = row["FileName"].replace(".wav", "")
                ep = fn.rsplit("_", 1)[0]
                if ep not in episodes:
                    continue
                out[ep][_utt_number(fn)] = {
                    "utterance": fn, "code": row["EmoClass"].strip(), "spkr": (row.get("SpkrID") or "").strip(),
                    "gender": (row.get("Gender") or "").strip(),
                    "act": round((float(row["EmoAct"]) - 1) / 6, 3), "val": round((float(row["EmoVal"]) - 1) / 6, 3),
                    "dom": round((float(row["EmoDom"]) - 1) / 6, 3), "votes": Counter()}
        with open(self.pod / "Labels/labels_detailed.csv", encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                fn = row["FileName"].replace(".wav", "")
                ep = fn.rsplit("_", 1)[0]
                lab = out.get(ep, {}).get(_utt_number(fn))
                if lab is not None:
                    v = row["EmoClass_Major"].strip()
                    lab["votes"][name_to_code.get(v, v)] += 1
        for labs in out.values():
            for lab in labs.values():
                tot = sum(lab["votes"].values())
                lab["cf"] = round(lab["votes"].get(lab["code"], 0) / tot, 3) if tot else 0.0
                lab["votes"] = dict(sorted(lab["votes"].items()))
        return out

    def conversation(self, ep: str) -> Optional[tuple[str, float, Optional[float]]]:
        cid = "MSP-Conversation_" + ep.split("_")[-1]
        for r in _split_semicolon(self.conv / "Time_Labels/conversations.txt"):
            if r[0] == cid:
                end = None
                if len(r) > 2:
                    try:
                        end = float(r[2]) if float(r[2]) > float(r[1]) else None
                    except ValueError:
                        end = None
                return cid, float(r[1]), end
        return None

    def utterance_times(self, ep: str, segs: list[dict], offset: Optional[float]) -> dict[str, tuple[float, float]]:
        """Utterance number -> (t0, t1): segments.json + conversation offset, else transcript match."""
        prefix = ep + "_"
        seg_map = json.loads((self.conv / "Time_Labels/segments.json").read_text(encoding="utf-8"))
        times = {}
        if offset is not None:
            for key, sv in seg_map.items():
                if key.startswith(prefix):
                    times[_utt_number(key)] = (float(sv["Start_Time"]) + offset, float(sv["End_Time"]) + offset)
        seg_words = [set(words(s.get("text", ""))) for s in segs]
        prev = 0
        for tp in sorted((self.pod / "Transcripts").glob(f"{prefix}*.txt")):
            n = _utt_number(tp.stem)
            if n in times:
                t0 = times[n][0]
                prev = min(range(len(segs)), key=lambda i: abs(segs[i]["start"] - t0)) if segs else 0
                continue
            w = set(words(tp.read_text(encoding="utf-8")))
            if not w or not segs:
                continue
            # transcripts are in time order: best word overlap at or after the previous utterance
            best = max(range(prev, len(segs)), key=lambda i: (len(w & seg_words[i]), -i))
            if w & seg_words[best]:
                times[n] = (segs[best]["start"], segs[best]["end"])
                prev = best
        return times

    def transcript(self, utterance: str) -> str:
        p = self.pod / "Transcripts" / f"{utterance}.txt"
        return p.read_text(encoding="utf-8").strip() if p.exists() else ""

    def traces(self, cid: str) -> dict[str, list[tuple[float, float]]]:
        """Dimension -> [(absolute time, mean / 100)] over the conversation's parts."""
        parts = []
        for fname in ("conversation_parts.txt", "test2_conversation_parts.txt"):
            f = self.conv / "Time_Labels" / fname
            if f.exists():
                parts += [(r[0], float(r[1])) for r in _split_semicolon(f) if r[0].startswith(cid + "_")]
        out = {}
        for dim in DIMS:
            pts = []
            for pid, t0 in sorted(parts, key=lambda x: x[1]):
                f = self.conv / "Traces" / dim / f"{pid}.csv"
                if f.exists():
                    with open(f, encoding="utf-8", newline="") as fh:
                        pts += [(t0 + float(r["Central_Time"]), float(r["Mean"]) / 100.0) for r in csv.DictReader(fh)]
            out[dim] = sorted(pts)
        return out


# ---------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------
def _in(segs, t0, t1):
    return [s for s in segs if s["end"] > t0 and s["start"] < t1]


def _single(s) -> Optional[str]:
    g = s["global_speaker2"]
    return g[0] if len(g) == 1 else None


def dominant_speaker(segs, t0, t1, share) -> Optional[str]:
    cov = defaultdict(float)
    for s in _in(segs, t0, t1):
        if _single(s):
            cov[_single(s)] += min(s["end"], t1) - max(s["start"], t0)
    if not cov:
        return None
    best = min(cov, key=lambda k: (-cov[k], k))
    return best if cov[best] / sum(cov.values()) >= share else None


def _ctx(segs, t0, t1, chars):
    return " ".join(s.get("text", "") for s in _in(segs, t0, t1) if s.get("text"))[:chars]


def find_st_events(segs, labels, times, transcripts: Callable[[str], str], p: EmotionParams,
                   exclude: Iterable[str] = ()) -> list[dict]:
    """Annotated utterances usable as state/locate targets (consensus cf >= 0.5, speaker context)."""
    excl = set(exclude)
    out = []
    for n in sorted(labels):
        lab = labels[n]
        if lab["cf"] < p.st_min_cf or n not in times or lab["utterance"] in excl:
            continue
        t0, t1 = times[n]
        spk = dominant_speaker(segs, t0, t1, p.st_spk_share)
        if lab["spkr"].isdigit() and any(lab["spkr"] == _single(s) for s in segs):
            spk = lab["spkr"]
        if spk is None:
            continue
        before = [s for s in _in(segs, t0 - p.st_context_sec, t0) if spk in s["global_speaker2"] and s.get("text")]
        if len(before) < p.st_context_min:
            continue
        seg_text = transcripts(lab["utterance"])
        ctx = " ".join(x for x in (_ctx(segs, t0 - p.ctx_sec, t0, p.ctx_chars), seg_text,
                                   _ctx(segs, t1, t1 + p.ctx_sec, p.ctx_chars)) if x)
        out.append({"shape": "st_event", "n": n, "t0": round(t0, 3), "t1": round(t1, 3), "spk": spk,
                    "code": lab["code"], "cf": lab["cf"], "votes": lab["votes"], "act": lab["act"],
                    "val": lab["val"], "dom": lab["dom"], "seg_text": seg_text, "ctx": ctx,
                    "score": lab["cf"]})
    return out


def _halves(pts, t, p):
    half = p.ct_window_sec / 2
    a = [m for at, m in pts if t <= at < t + half]
    b = [m for at, m in pts if t + half <= at <= t + p.ct_window_sec]
    return (float(np.mean(a)), float(np.mean(b))) if a and b else None


def _windows(pts, p):
    if not pts:
        return
    t, last = pts[0][0], pts[-1][0]
    while t + p.ct_window_sec <= last + 1e-9:
        yield round(t, 3)
        t += p.ct_step_sec


def find_ct_trends(segs, traces, p: EmotionParams) -> list[dict]:
    """Rising/falling trace windows after per-dimension NMS, plus one flat window per dimension."""
    out = []
    for dim in DIMS:
        raw = []
        for t in _windows(traces.get(dim, []), p):
            h = _halves(traces[dim], t, p)
            if h and abs(h[1] - h[0]) > p.ct_min_delta:
                spk = dominant_speaker(segs, t, t + p.ct_window_sec, p.ct_spk_share)
                if spk:
                    raw.append((t, h, spk))
        kept = []
        for t, h, spk in sorted(raw, key=lambda r: (-abs(r[1][1] - r[1][0]), r[0])):
            if all(not (t < k[0] + p.ct_window_sec + p.ct_nms_sec and t + p.ct_window_sec > k[0] - p.ct_nms_sec)
                   for k in kept):
                kept.append((t, h, spk))
        for t, (m1, m2), spk in sorted(kept):
            d = round(m2 - m1, 3)
            out.append({"shape": "ct_trend", "dim": dim, "t0": t, "t1": round(t + p.ct_window_sec, 3),
                        "spk": spk, "delta": d, "half1": round(m1, 3), "half2": round(m2, 3),
                        "direction": "rising" if d > 0 else "falling", "score": abs(d),
                        "ctx": _ctx(segs, t, t + p.ct_window_sec, p.ctx_chars)})
    trends = [(c["t0"], c["t1"]) for c in out]
    for dim in DIMS:
        best = None
        for t in _windows(traces.get(dim, []), p):
            if any(t < e1 + p.ct_nms_sec and t + p.ct_window_sec > e0 - p.ct_nms_sec for e0, e1 in trends):
                continue
            h = _halves(traces[dim], t, p)
            spk = dominant_speaker(segs, t, t + p.ct_window_sec, p.ct_spk_share) if h else None
            if h and spk and (best is None or abs(h[1] - h[0]) < best[0]):
                best = (abs(h[1] - h[0]), t, h, spk)
        if best:
            _, t, (m1, m2), spk = best
            out.append({"shape": "ct_trend", "dim": dim, "t0": t, "t1": round(t + p.ct_window_sec, 3),
                        "spk": spk, "delta": round(m2 - m1, 3), "half1": round(m1, 3), "half2": round(m2, 3),
                        "direction": "none", "score": -abs(m2 - m1),
                        "ctx": _ctx(segs, t, t + p.ct_window_sec, p.ctx_chars)})
    return out


def find_multi_spk_windows(segs, p: EmotionParams) -> list[dict]:
    """Windows with >= 2 well-covered speakers whose automatic AVD differ by > 0.10."""
    out = []
    if not segs:
        return out
    t, last = segs[0]["start"], max(s["end"] for s in segs)
    while t + p.multi_window_sec <= last + 1e-9:
        t1 = t + p.multi_window_sec
        inside = _in(segs, t, t1)
        cov = defaultdict(float)
        for s in inside:
            if _single(s):
                cov[_single(s)] += min(s["end"], t1) - max(s["start"], t)
        active = sorted(k for k, c in cov.items() if c > p.multi_min_cover_sec)
        best = None
        if len(active) >= 2:
            for dim in DIMS:
                vals = {}
                for spk in active:
                    v = [s[dim.lower()] for s in inside if _single(s) == spk and s.get("num_speakers", 1) == 1
                         and s[dim.lower()] is not None]
                    if v:
                        vals[spk] = round(float(np.mean(v)), 3)
                if len(vals) >= 2:
                    spread = max(vals.values()) - min(vals.values())
                    if best is None or spread > best[1]:
                        best = (dim, spread, vals)
        if best and best[1] > p.multi_min_spread:
            out.append({"shape": "multi_spk_window", "t0": round(t, 3), "t1": round(t1, 3), "dim": best[0],
                        "spk_val": best[2], "score": round(best[1], 3),
                        "ctx": _ctx(segs, t, t1, p.ctx_chars)})
        t += p.multi_step_sec
    return out


def assign_candidates(cands: list[dict], p: EmotionParams, rng: np.random.Generator) -> dict[str, list[dict]]:
    """Stratified choice of at most ``cap_per_type`` candidates per query type.

    Filled most-constrained first (comparison, change, state, locate); change keeps
    ``flat_slots`` for a flat window; an st_event may serve both state and locate.
    """
    def pool(pred):
        return sorted((c for c in cands if pred(c)), key=lambda c: (-c["score"], c["t0"]))
    cap = p.cap_per_type
    out = {"comparison": stratified_pick(pool(lambda c: c["shape"] == "multi_spk_window"), cap, rng)}
    flats = stratified_pick(pool(lambda c: c["shape"] == "ct_trend" and c["direction"] == "none"),
                            min(p.flat_slots, cap), rng)
    trends = stratified_pick(pool(lambda c: c["shape"] == "ct_trend" and c["direction"] != "none"),
                             cap - len(flats), rng)
    out["change"] = trends + flats
    out["state"] = stratified_pick(pool(lambda c: c["shape"] == "st_event" and c["code"] not in NON_TARGET_CODES), cap, rng)
    out["locate"] = stratified_pick(pool(lambda c: c["shape"] == "st_event"
                                         and c["code"] not in NON_TARGET_CODES + ("N",)), cap, rng)
    return out


def find_clusters(events: list[dict], p: EmotionParams) -> list[dict]:
    """locate_hard clusters: per (speaker, emotion) the densest run of >= 3 events within 300 s."""
    groups = defaultdict(list)
    for e in events:
        if e["code"] not in NON_TARGET_CODES + ("N",):
            groups[(e["spk"], e["code"])].append(e)
    clusters = []
    for key in sorted(groups):
        ev = sorted(groups[key], key=lambda e: e["t0"])
        best = None
        for i in range(len(ev)):
            j = i
            while j + 1 < len(ev) and ev[j + 1]["t1"] - ev[i]["t0"] <= p.cluster_span_sec:
                j += 1
            if j - i + 1 >= p.cluster_min_events and (best is None or j - i > best[1] - best[0]):
                best = (i, j)
        if best:
            members = ev[best[0]: best[1] + 1]
            cen = np.mean([[e["act"], e["val"], e["dom"]] for e in members], axis=0)
            target = max(members, key=lambda e: (float(np.linalg.norm(np.array([e["act"], e["val"], e["dom"]]) - cen)), -e["t0"]))
            clusters.append({"spk": key[0], "code": key[1], "members": members, "target": target})
    clusters.sort(key=lambda c: (-len(c["members"]), c["members"][0]["t0"]))
    return clusters[: p.max_hard_per_episode]


# ---------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------
def pick_quote(text: str, p: EmotionParams, rng: np.random.Generator) -> str:
    """A random 4-12-word clause of ``text`` (the whole text when it is shorter)."""
    clauses = [c.strip() for c in re.split(r"[.,;:!?]+", text) if c.strip()]
    ok = [c for c in clauses if p.quote_min_words <= len(c.split()) <= p.quote_max_words]
    if ok:
        return ok[int(rng.integers(len(ok)))]
    toks = text.split()
    if len(toks) > p.quote_max_words:
        s = int(rng.integers(len(toks) - p.quote_max_words + 1))
        return " ".join(toks[s: s + p.quote_max_words])
    return text.strip()


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


def prepare_emotion(src, out, params: EmotionParams = EmotionParams(), *,
                    topic: Union[str, Callable[[str], str], None] = None, progress: bool = True) -> dict:
    """Build the emotion domain folder ``out`` from the unpacked LongEmo sources ``src``."""
    p, out = params, Path(out)
    source = LongEmoSource(src, p)
    require_source(source.root, emotion_expected(p), "LongEmo")
    topic_fn = make_topic_generator(topic or p.topic)
    episodes, selection_log = _selected_episodes(source, src, p)
    segs_by_ep, clean = _scan_all_data(source, set(episodes), p, progress)
    labels = source.consensus(set(episodes))
    train = source.train_utterances()
    clips = _Clips(out, p.sample_rate, {})
    spk_clips = _speaker_clips(clean, p)
    per_ep, all_events = _episode_candidates(source, episodes, segs_by_ep, labels, train, topic_fn, p, progress)
    emo_clips = _emotion_clips(all_events, p)
    recs, gt_segs, queries, skipped = [], [], [], Counter()
    for ep in tqdm(episodes, desc="longemo: queries", disable=not progress):
        segs, conv, times, events, cands = per_ep[ep]
        e = _Episode(ep, source, p, out, clips, spk_clips, emo_clips, segs, queries, skipped)
        recs.append(e.write_recording(conv))
        gt_segs += e.ground_truth(times, labels.get(ep, {})).values()
        chosen = assign_candidates(cands, p, rng_for(p.seed, "assign", ep))
        _comparison_queries(e, chosen["comparison"])
        _change_queries(e, chosen["change"])
        _state_queries(e, chosen["state"])
        _locate_queries(e, chosen["locate"], events)
        _locate_hard_queries(e, events)
    topic_name = getattr(topic_fn, "name", getattr(topic_fn, "__name__", "custom"))
    return write_corpus(out, recs, gt_segs, queries, {
        "corpus": "LongEmo (MSP-Podcast v2.0 + MSP-Conversation v2.0 + NaturalVoices)", "source": str(src),
        "params": asdict(p), "topic_generator": topic_name, "paper_topic_model": PAPER_TOPIC_MODEL,
        "episode_selection": selection_log, "skipped": dict(sorted(skipped.items()))})


def _selected_episodes(source: LongEmoSource, src, p: EmotionParams) -> tuple[list[str], dict]:
    """The selected Test1 episodes (and the selection log); a clear error when none or audio is missing."""
    episodes, selection_log = source.select_episodes()
    missing = [ep for ep in episodes if not source.flac(ep).exists()]
    if missing:
        raise SourceError(f"LongEmo: audio of selected episodes is missing: "
                          f"{[str(source.flac(e)) for e in missing[:5]]} ({len(missing)} in all); unpack "
                          f"podcasts_flac/ from {NV_URL}")
    if not episodes:
        raise SourceError(f"LongEmo at {src}: no MSP-Conversation Test1 episode passes the selection "
                          f"(< {p.max_train_utts} Train utterances, ratio < {p.max_train_ratio})")
    return episodes, selection_log


def _scan_all_data(source: LongEmoSource, ep_set: set, p: EmotionParams, progress: bool) -> tuple[dict, dict]:
    """One pass over all_data: per-episode segments of selected episodes + clean clips anywhere
    (``{speaker: [(snr, ep, t0, t1, gender)]}``)."""
    segs_by_ep: dict[str, list[dict]] = {}
    clean: dict[str, list[tuple]] = defaultdict(list)
    for ep, segs in tqdm(iter_all_data(source.root / "all_data.json"), desc="longemo: all_data",
                         disable=not progress):
        if ep in ep_set:
            segs_by_ep[ep] = segs
        if not source.flac(ep).exists():
            continue
        for s in segs:
            d = s["end"] - s["start"]
            if (_single(s) and s.get("num_speakers") == 1 and s.get("speech_classification") == "Speech"
                    and (s["SNR"] or -math.inf) >= p.clip_min_snr and p.clip_min_sec <= d <= p.clip_max_sec):
                clean[_single(s)].append((s["SNR"], ep, s["start"], s["end"], s.get("gender")))
    lost = sorted(ep_set - set(segs_by_ep))
    if lost:
        raise SourceError(f"LongEmo: episodes {lost[:5]} are selected but absent from all_data.json")
    return segs_by_ep, clean


def _speaker_clips(clean: dict, p: EmotionParams) -> dict[str, list[tuple]]:
    """Speaker clips: best-SNR clean clip per (speaker, episode), top N by SNR."""
    spk_clips: dict[str, list[tuple]] = {}
    for spk, rows in clean.items():
        best = {}
        for r in sorted(rows, key=lambda r: (-r[0], r[1], r[2])):
            best.setdefault(r[1], r)
        spk_clips[spk] = sorted(best.values(), key=lambda r: (-r[0], r[1], r[2]))[: p.clips_per_speaker]
    return spk_clips


def _episode_candidates(source, episodes, segs_by_ep, labels, train, topic_fn, p: EmotionParams,
                        progress: bool) -> tuple[dict, list]:
    """Per episode ``(segs, conv, times, events, candidates)``, and every event tagged with its episode."""
    per_ep = {}
    all_events = []
    for ep in tqdm(episodes, desc="longemo: candidates", disable=not progress):
        segs = segs_by_ep[ep]
        conv = source.conversation(ep)
        times = source.utterance_times(ep, segs, conv[1] if conv else None)
        events = find_st_events(segs, labels.get(ep, {}), times, source.transcript, p, exclude=train)
        trends = find_ct_trends(segs, source.traces(conv[0]), p) if conv else []
        multi = find_multi_spk_windows(segs, p)
        for c in events + trends + multi:
            c["topic"] = topic_fn(c["ctx"][: p.topic_chars]) if c.get("ctx") else "this topic"
        per_ep[ep] = (segs, conv, times, events, trends + multi + events)
        all_events += [dict(e, ep=ep) for e in events]
    return per_ep, all_events


def _emotion_clips(all_events: list, p: EmotionParams) -> dict:
    """Emotion clips (fixed): the annotated emotional utterances themselves, top N per code."""
    emo_clips = defaultdict(list)
    for e in sorted(all_events, key=lambda e: (-e["cf"], e["ep"], e["t0"])):
        if e["code"] not in NON_TARGET_CODES + ("N",) and len(emo_clips[e["code"]]) < p.emotion_clips_per_code:
            emo_clips[e["code"]].append(e)
    return emo_clips


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


def _comparison_queries(e: _Episode, chosen: list) -> None:
    p, ep, dur = e.p, e.ep, e.dur
    for c in chosen:
        rng = rng_for(p.seed, "comparison", ep, c["t0"])
        vals = c["spk_val"]
        hi_s = min(vals, key=lambda s: (-vals[s], s))
        lo_s = min(vals, key=lambda s: (vals[s], s))
        a, b = sorted((hi_s, lo_s))
        ra, rb = e.spk_clip(a, c["t0"], c["t1"]), e.spk_clip(b, c["t0"], c["t1"])
        if not (ra and rb):
            e.skipped["comparison: no speaker clip"] += 1
            continue
        left = float(rng.uniform(p.comparison_min_side_sec, p.comparison_pad_sec - p.comparison_min_side_sec))
        q0, q1 = c["t0"] - left, c["t1"] + (p.comparison_pad_sec - left)
        shift = max(0.0, -q0) - max(0.0, q1 - dur)
        q0, q1 = max(0, int(math.floor(q0 + shift))), min(int(math.ceil(q1 + shift)), int(dur))
        dim = c["dim"].lower()
        gtd = {"winner": "A" if vals[a] > vals[b] else "B", "dimension": dim,
               "values": {"A": vals[a], "B": vals[b]}, "speakers": {"A": a, "B": b},
               "t0": c["t0"], "t1": c["t1"], "window": [q0, q1]}
        e.add("comparison", text=f"Speaker A: [A's audio example]. Speaker B: [B's audio example]. From {q0} to "
              f"{q1} seconds, discussing {c['topic']}, which speaker had higher {dim}, A or B?",
              ground_truth=gtd, judge_info={"type": "speaker_id", **gtd}, references={"A": ra, "B": rb},
              gt_segment_ids=tuple(sorted(set(e.gt_ids(c["t0"], c["t1"], a) + e.gt_ids(c["t0"], c["t1"], b)))),
              time_ref=c["t0"], custom={"topic": c["topic"], "shape": c["shape"]})


def _change_queries(e: _Episode, chosen: list) -> None:
    for c in chosen:
        ra = e.spk_clip(c["spk"], c["t0"], c["t1"])
        if not ra:
            e.skipped["change: no speaker clip"] += 1
            continue
        dim = c["dim"].lower()
        gtd = {"direction": c["direction"], "dimension": dim, "delta": c["delta"], "half1": c["half1"],
               "half2": c["half2"], "t0": c["t0"], "t1": c["t1"]}
        e.add("change", text=f"Speaker: [audio example]. From {int(c['t0'])} to {int(math.ceil(c['t1']))} seconds, "
              f"how did this speaker's {dim} change while discussing {c['topic']}?",
              ground_truth=gtd, judge_info={"type": "trend", **gtd}, references={"A": ra},
              gt_segment_ids=e.gt_ids(c["t0"], c["t1"], c["spk"]) or e.gt_ids(c["t0"], c["t1"]),
              time_ref=c["t0"], custom={"topic": c["topic"], "speaker": c["spk"]})


def _state_queries(e: _Episode, chosen: list) -> None:
    p, ep = e.p, e.ep
    for c in chosen:
        rng = rng_for(p.seed, "state", ep, c["n"])
        ra = e.spk_clip(c["spk"], c["t0"], c["t1"])
        if not ra:
            e.skipped["state: no speaker clip"] += 1
            continue
        emo = _name(c["code"])
        votes = _votes_named(c["votes"])
        secondary = [n for n, _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])) if n != emo]
        quote = pick_quote(c["seg_text"], p, rng)
        gtd = {"emotion": emo, "arousal": c["act"], "valence": c["val"], "dominance": c["dom"],
               "cf": c["cf"], "votes": votes, "secondary": secondary[0] if secondary else None}
        e.add("state", text=f"Speaker: [audio example]. {spoken_time(c['t0'])[0].upper()}"
              f"{spoken_time(c['t0'])[1:]}, this speaker was talking about {c['topic']} and mentioned "
              f"\"{quote}\". Which emotion(s) did they show?",
              ground_truth=gtd, judge_info={"type": "categorical", "primary": emo, "secondary": secondary,
                                            "votes": votes, "cf": c["cf"]},
              references={"A": ra}, gt_segment_ids=(f"{ep}_{c['n']}",), time_ref=c["t0"],
              custom={"topic": c["topic"], "quote": quote, "utterance": f"{ep}_{c['n']}"})


def _locate_queries(e: _Episode, chosen: list, events: list) -> None:
    p, ep, dur = e.p, e.ep, e.dur
    same = defaultdict(list)
    for ev in events:
        same[(ev["spk"], ev["code"])].append(ev)
    for c in chosen:
        rng = rng_for(p.seed, "locate", ep, c["n"])
        ra, re_ = e.spk_clip(c["spk"], c["t0"], c["t1"]), e.emo_clip(c, rng)
        if not (ra and re_):
            e.skipped["locate: no reference clip"] += 1
            continue
        others = [o for o in same[(c["spk"], c["code"])] if o["n"] != c["n"]]
        w0 = max([c["t0"] - p.locate_max_expand_sec, e.lo] + [o["t1"] for o in others if o["t1"] <= c["t0"]])
        w1 = min([c["t1"] + p.locate_max_expand_sec, e.hi] + [o["t0"] for o in others if o["t0"] >= c["t1"]])
        w0, w1 = int(math.floor(max(0.0, w0))), int(math.ceil(min(w1, dur)))
        quote = pick_quote(c["seg_text"], p, rng)
        gtd = {"t0": c["t0"], "t1": c["t1"], "emotion": _name(c["code"]), "quote": quote, "window": [w0, w1]}
        e.add("locate", text=f"Speaker: [speaker example]. Emotion: [emotion example]. Between {w0} and {w1} "
              f"seconds, when did this speaker show the same emotion as the clip, and what were they saying?",
              ground_truth=gtd, judge_info={"type": "time_and_quote", "t0": c["t0"], "t1": c["t1"],
                                            "emotion": _name(c["code"]), "seg_text": c["seg_text"]},
              references={"A": ra, "E": re_}, gt_segment_ids=(f"{ep}_{c['n']}",), time_ref=c["t0"],
              custom={"topic": c["topic"], "utterance": f"{ep}_{c['n']}"})


def _locate_hard_queries(e: _Episode, events: list) -> None:
    p, ep, dur = e.p, e.ep, e.dur
    for cl in find_clusters(events, p):
        tg = cl["target"]
        rng = rng_for(p.seed, "locate_hard", ep, tg["n"])
        re_ = e.emo_clip(tg, rng)
        if not re_:
            e.skipped["locate_hard: no emotion clip"] += 1
            continue
        w0 = int(math.floor(max(e.lo, 0.0, cl["members"][0]["t0"] - p.cluster_pad_sec)))
        w1 = int(math.ceil(min(e.hi, dur, cl["members"][-1]["t1"] + p.cluster_pad_sec)))
        quote = pick_quote(tg["seg_text"], p, rng)
        gtd = {"t0": tg["t0"], "t1": tg["t1"], "emotion": _name(tg["code"]), "quote": quote,
               "n_events": len(cl["members"]), "window": [w0, w1]}
        e.add("locate_hard", text=f"Emotion: [audio example]. Between {w0} and {w1} seconds, when did someone "
              f"show the same emotion as the clip, and what were they saying?",
              ground_truth=gtd, judge_info={"type": "time_and_quote", "t0": tg["t0"], "t1": tg["t1"],
                                            "emotion": _name(tg["code"]), "seg_text": tg["seg_text"],
                                            "n_events": len(cl["members"])},
              references={"E": re_}, gt_segment_ids=(f"{ep}_{tg['n']}",), time_ref=tg["t0"],
              custom={"speaker": cl["spk"], "cluster": [f"{ep}_{ev['n']}" for ev in cl["members"]]})


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
