"""Reading the unpacked LongEmo sources: NaturalVoices ``all_data.json`` (streamed,
:func:`iter_all_data`) and the MSP-Podcast / MSP-Conversation files (:class:`LongEmoSource`:
episode selection, consensus labels, conversation offsets, utterance times, transcripts, traces)."""
from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterator, Optional

from harp_lib.core.labels import CODE_TO_EMOTION
from harp_lib.corpora.datasets.common import SourceError, check_source, words
from harp_lib.corpora.datasets.longemo_params import DIMS, EmotionParams, emotion_expected

__all__ = ["LongEmoSource", "iter_all_data"]


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
        import ijson  # optional: ijson
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
