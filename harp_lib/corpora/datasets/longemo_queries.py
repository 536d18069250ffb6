"""LongEmo queries, one builder per type: comparison, change, state, locate and locate_hard
(templates, ground truth, judge info, reference clips), plus the quote picked from an utterance."""
from __future__ import annotations

import math
import re
from collections import defaultdict

import numpy as np

from harp_lib.corpora.datasets.common import rng_for, spoken_time
from harp_lib.corpora.datasets.longemo_candidates import find_clusters
from harp_lib.corpora.datasets.longemo_episode import _Episode, _name, _votes_named
from harp_lib.corpora.datasets.longemo_params import EmotionParams


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
