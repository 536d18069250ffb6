"""Hand-crafted ground truth and predictions for the evaluation tests (no agent, no benchmark
generator needed): one recording per domain, one query per query type, plus a clinical "No"
query without GT evidence.

Layout of the crafted recordings (times in seconds):

* emotion ``ep1`` (300 s): ten 30 s GT segments ``ep1_0001``..``ep1_0010``, speakers alternating
  SPK_A / SPK_B, primary emotions N H N A N S S N H N.
* clinical ``c1`` (120 s): six 20 s GT segments; ``c1_0002`` the patient reports a cough,
  ``c1_0003`` has 2 coughs.
* song ``m1`` (600 s): four 150 s songs, two 75 s GT chunks each (speaker SONG_0N), tiers
  High, Low, Mid, High.
"""
from __future__ import annotations

from pathlib import Path


from harp_lib.config import get_setup
from harp_lib.evaluate.judge import JudgeInput
from harp_lib.evaluate.store import Benchmark
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import (Evidence, EvidenceItem, EvidenceSet, Plan, PlanSet, Prediction, Query, Recording,
                                  Segment)

REPO = Path(__file__).resolve().parents[2]
EMO = ["Neutral", "Happy", "Neutral", "Angry", "Neutral", "Sad", "Sad", "Neutral", "Happy", "Neutral"]


def gt_segments() -> list[Segment]:
    segs = [Segment(f"ep1_{i + 1:04d}", "ep1", 30 * i, 30 * (i + 1), "SPK_A" if i % 2 == 0 else "SPK_B",
                    f"emotion text {i}", {"primary": EMO[i]}) for i in range(10)]
    cl = []
    for i in range(6):
        labels = {"primary": "no cough", "cough_count": 0}
        text = "how are you today"
        if i == 1:
            text = "I have had a bad cough for a week"
        if i == 2:
            labels = {"primary": "2 cough", "cough_count": 2}
        cl.append(Segment(f"c1_{i + 1:04d}", "c1", 20 * i, 20 * (i + 1), "doctor" if i % 2 == 0 else "patient",
                          text, labels))
    tiers = ["High", "Low", "Mid", "High"]
    songs = []
    for n in range(4):
        for k in range(2):
            songs.append(Segment(f"m1_{2 * n + k + 1:04d}", "m1", 150 * n + 75 * k, 150 * n + 75 * (k + 1),
                                 f"SONG_{n + 1:02d}", "", {"primary": tiers[n]}, custom={"song_index": n + 1}))
    return segs + cl + songs


def queries() -> list[Query]:
    return [
        Query("e_state", "emotion", "ep1", "state", "What is speaker A's emotional state around 0:45?",
              {"emotion": "Happy", "arousal": 0.7, "valence": 0.8, "dominance": 0.5},
              {"type": "categorical", "primary": "Happy", "secondary": ["Surprise"]},
              {"A": "references/spk_a.wav"}, ("ep1_0002",), 45.0),
        Query("e_change", "emotion", "ep1", "change", "Does speaker A's valence rise or fall from 1:00 to 2:00?",
              {"direction": "rising", "dimension": "valence", "delta": 0.3, "half1": 0.3, "half2": 0.6,
               "t0": 60.0, "t1": 120.0}, {"type": "trend"}, {"A": "references/spk_a.wav"},
              ("ep1_0003", "ep1_0004"), 60.0),
        Query("e_comp", "emotion", "ep1", "comparison", "Who is more aroused between 2:00 and 3:00, A or B?",
              {"winner": "B", "dimension": "arousal", "values": {"A": 0.3, "B": 0.7}, "t0": 120.0, "t1": 180.0},
              {"type": "speaker_id"}, {"A": "references/spk_a.wav", "B": "references/spk_b.wav"},
              ("ep1_0005", "ep1_0006"), 120.0),
        Query("e_locate", "emotion", "ep1", "locate", "When does speaker B sound like the example?",
              {"t0": 100.0, "t1": 104.0, "emotion": "Angry", "quote": "emotion text 3"},
              {"type": "time_and_quote"}, {"A": "references/spk_b.wav", "E": "references/angry.wav"},
              ("ep1_0004",), 100.0),
        Query("e_locate_hard", "emotion", "ep1", "locate_hard", "When does anyone sound like the example?",
              {"t0": 200.0, "t1": 205.0, "emotion": "Sad", "quote": "emotion text 6", "n_events": 1},
              {"type": "time_and_quote"}, {"E": "references/sad.wav"}, ("ep1_0007",), 200.0),
        Query("c_rep", "clinical", "c1", "reported", "Does the patient report a cough?", {"answer": "Yes"},
              {"type": "yes_no", "group": "respiratory"}, {}, ("c1_0002",)),
        Query("c_exh", "clinical", "c1", "exhibited", "Does the patient cough during the consultation?",
              {"answer": "Yes"}, {"type": "yes_no"}, {}, ("c1_0003",)),
        Query("c_no", "clinical", "c1", "reported", "Does the patient report a fever?", {"answer": "No"},
              {"type": "yes_no"}, {}, ()),
        Query("s_time", "song", "m1", "time", "Which is better: the song at 1:00 or the song at 5:30?",
              {"winner": "A", "delta": 1.2, "mean_a": 4.1, "mean_b": 2.9}, {"type": "pairwise", "song_a": 1, "song_b": 3},
              {}, ("m1_0001", "m1_0002", "m1_0005", "m1_0006"), 60.0),
        Query("s_pos", "song", "m1", "position", "Which is better: the 2nd song or the 4th song?",
              {"winner": "B", "delta": 1.5, "mean_a": 2.0, "mean_b": 3.5}, {"type": "pairwise", "song_a": 2, "song_b": 4},
              {}, ("m1_0003", "m1_0004", "m1_0007", "m1_0008"), 150.0),
        Query("s_audio", "song", "m1", "audio", "Which of the two snippets' songs is better?",
              {"winner": "tie", "delta": 0.1, "mean_a": 3.0, "mean_b": 3.1}, {"type": "pairwise", "song_a": 1, "song_b": 4},
              {"A": "references/song_a.wav", "B": "references/song_b.wav"},
              ("m1_0001", "m1_0002", "m1_0007", "m1_0008"), 0.0),
    ]


RECORDINGS = {"ep1": 300.0, "c1": 120.0, "m1": 600.0}
DOMAIN_OF = {"ep1": "emotion", "c1": "clinical", "m1": "song"}


def benchmark(domain: str) -> Benchmark:
    segs = [s for s in gt_segments() if DOMAIN_OF[s.recording_id] == domain]
    qs = {q.query_id: q for q in queries() if q.domain == domain}
    by_rec: dict[str, list[Segment]] = {}
    for s in segs:
        by_rec.setdefault(s.recording_id, []).append(s)
    return Benchmark(domain, Path("/nonexistent") / domain, qs, by_rec,
                     {r: d for r, d in RECORDINGS.items() if DOMAIN_OF[r] == domain})


def item(seg_id: str, start: float, end: float, speaker=None, text="", **labels) -> EvidenceItem:
    return EvidenceItem(seg_id, start, end, speaker, text, labels, {"time": 1.0})


def prediction(q: Query, answer: str, rationale: str = "", items=(), setup: str = "A3",
               plan: Plan | None = None, clip: tuple | None = None) -> Prediction:
    es = EvidenceSet(1, "full recording", 0, RECORDINGS[q.recording_id], tuple(items),
                     clip_start=clip[0] if clip else None, clip_end=clip[1] if clip else None)
    return Prediction(q.query_id, setup, q.domain, q.recording_id, q.query_type,
                      plan or Plan((PlanSet("full recording", time=True),)), Evidence((es,)), answer, rationale,
                      backends={"planner": "rule", "answerer": "rule"})


def judge_input(p: Prediction) -> JudgeInput:
    b = benchmark(p.domain)
    q = b.queries[p.query_id]
    return JudgeInput(q, p, get_setup(p.setup), tuple(b.recording_segments(q.recording_id)),
                      b.duration(q.recording_id))


def write_benchmark(root: Path) -> None:
    """Write the crafted ground truth under ``root/data/benchmark/<domain>/``."""
    for dom in ("emotion", "clinical", "song"):
        d = root / "data" / "benchmark" / dom
        write_jsonl(d / "queries.jsonl", [q for q in queries() if q.domain == dom])
        write_jsonl(d / "segments.jsonl", [s for s in gt_segments() if DOMAIN_OF[s.recording_id] == dom])
        write_jsonl(d / "recordings.jsonl", [Recording(r, dom, f"recordings/{r}.wav", dur)
                                            for r, dur in RECORDINGS.items() if DOMAIN_OF[r] == dom])
