"""Ground-truth rules of the built-in benchmark (pure functions, no audio).

These are the paper's construction rules (HARP_REFERENCE §4.1 and §4.3) written so a test can
check each one by hand: trend direction of a change window, the per-speaker mean over a window,
the comparison winner, same-emotion runs ("events"), the locate window, clusters for
locate_hard, and the pairwise winner with its tie threshold.

>>> trend_direction(0.2, min_delta=0.08, flat_max=0.03)
'rising'
>>> pairwise_winner(3.1, 3.0, tie_delta=0.25)
'tie'
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import numpy as np

__all__ = ["Utt", "trend_direction", "speaker_mean", "half_means", "comparison",
           "Event", "find_events", "locate_window", "find_clusters", "cluster_target",
           "pairwise_winner", "time_phrase", "pair_rounds", "stable_int"]


def stable_int(text: str, bits: int = 32) -> int:
    """A seed-friendly integer from a string that is the same in every process (no ``hash()``).

    >>> stable_int("track_01") == stable_int("track_01")
    True
    """
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[: bits // 4], 16)


@dataclass(frozen=True)
class Utt:
    """What the rules need to know about one ground-truth utterance."""
    id: str
    speaker: str
    start: float
    end: float
    emotion: str
    avd: tuple  # (arousal, valence, dominance)
    text: str = ""

    def value(self, dim: str) -> float:
        return float(self.avd[("arousal", "valence", "dominance").index(dim)])


def trend_direction(delta: float, *, min_delta: float, flat_max: float) -> Optional[str]:
    """Direction of a change ``delta = mean(2nd half) - mean(1st half)``.

    ``rising``/``falling`` when ``|delta| > min_delta`` (paper: 0.08), ``none`` when
    ``|delta| <= flat_max``; in between the answer is ambiguous and ``None`` is returned
    (such windows are not asked about).

    >>> trend_direction(-0.3, min_delta=0.08, flat_max=0.03), trend_direction(0.01, min_delta=0.08, flat_max=0.03)
    ('falling', 'none')
    >>> trend_direction(0.05, min_delta=0.08, flat_max=0.03) is None
    True
    """
    if delta > min_delta:
        return "rising"
    if delta < -min_delta:
        return "falling"
    if abs(delta) <= flat_max:
        return "none"
    return None


def speaker_mean(utts: Iterable[Utt], speaker: str, dim: str, t0: float, t1: float) -> Optional[float]:
    """Overlap-weighted mean of ``dim`` over ``speaker``'s utterances inside ``[t0, t1]``.

    >>> u = [Utt("a", "S", 0, 10, "Sad", (0.2, 0.1, 0.3)), Utt("b", "S", 10, 20, "Happy", (0.8, 0.9, 0.6))]
    >>> round(speaker_mean(u, "S", "valence", 5, 20), 3)      # 5 s of 0.1, 10 s of 0.9
    0.633
    """
    num = den = 0.0
    for u in utts:
        if u.speaker != speaker:
            continue
        w = max(0.0, min(u.end, t1) - max(u.start, t0))
        if w > 0:
            num += w * u.value(dim)
            den += w
    return None if den <= 0 else num / den


def half_means(utts: Sequence[Utt], speaker: str, dim: str, t0: float, t1: float):
    """``(half1, half2, delta)`` of a speaker over the two halves of ``[t0, t1]`` (None if silent)."""
    mid = (t0 + t1) / 2.0
    h1 = speaker_mean(utts, speaker, dim, t0, mid)
    h2 = speaker_mean(utts, speaker, dim, mid, t1)
    if h1 is None or h2 is None:
        return None
    return h1, h2, h2 - h1


def comparison(utts: Sequence[Utt], spk_a: str, spk_b: str, t0: float, t1: float, *,
               min_spread: float, dims: Sequence[str] = ("arousal", "valence", "dominance")):
    """The dimension on which two speakers differ most in ``[t0, t1]``, or None.

    Returns ``(dim, value_a, value_b, winner)`` with winner ``"A"`` or ``"B"``; None when
    a speaker is silent or the largest spread is not above ``min_spread`` (paper: 0.10).

    >>> u = [Utt("a", "X", 0, 5, "Angry", (0.9, 0.1, 0.8)), Utt("b", "Y", 5, 9, "Sad", (0.2, 0.2, 0.3))]
    >>> comparison(u, "X", "Y", 0, 10, min_spread=0.1)
    ('arousal', 0.9, 0.2, 'A')
    """
    best = None
    for d in dims:
        a = speaker_mean(utts, spk_a, d, t0, t1)
        b = speaker_mean(utts, spk_b, d, t0, t1)
        if a is None or b is None:
            return None
        if best is None or abs(a - b) > abs(best[1] - best[2]) + 1e-12:
            best = (d, a, b)
    d, a, b = best
    if abs(a - b) <= min_spread:
        return None
    return d, round(a, 3), round(b, 3), ("A" if a > b else "B")


@dataclass(frozen=True)
class Event:
    """A run of one speaker's consecutive utterances with the same emotion."""
    speaker: str
    emotion: str
    start: float
    end: float
    utt_ids: tuple
    quote: str
    avd: tuple

    @property
    def span(self) -> tuple:
        return (self.start, self.end)


def find_events(utts: Sequence[Utt], *, max_gap: float) -> list[Event]:
    """Group each speaker's utterances into same-emotion runs (other speakers may interleave).

    A run breaks when the speaker's emotion changes or they are silent for more than
    ``max_gap`` seconds.  Sorted by start time.

    >>> u = [Utt("1", "A", 0, 3, "Happy", (.7, .8, .6), "x"), Utt("2", "B", 3, 5, "Sad", (.2, .2, .3), "y"),
    ...      Utt("3", "A", 5, 8, "Happy", (.7, .8, .6), "z"), Utt("4", "A", 8, 9, "Angry", (.9, .1, .8), "w")]
    >>> [(e.speaker, e.emotion, e.utt_ids) for e in find_events(u, max_gap=10)]
    [('A', 'Happy', ('1', '3')), ('B', 'Sad', ('2',)), ('A', 'Angry', ('4',))]
    """
    by_spk: dict[str, list[Utt]] = {}
    for u in sorted(utts, key=lambda u: (u.start, u.id)):
        by_spk.setdefault(u.speaker, []).append(u)
    events: list[Event] = []
    for spk in sorted(by_spk):
        run: list[Utt] = []
        for u in by_spk[spk] + [None]:
            if run and (u is None or u.emotion != run[-1].emotion or u.start - run[-1].end > max_gap):
                avd = tuple(round(float(np.mean([r.avd[i] for r in run])), 3) for i in range(3))
                events.append(Event(spk, run[0].emotion, run[0].start, run[-1].end,
                                    tuple(r.id for r in run), run[0].text, avd))
                run = []
            if u is not None:
                run.append(u)
    return sorted(events, key=lambda e: (e.start, e.speaker))


def locate_window(event: Event, events: Sequence[Event], duration: float, *, max_side: float) -> tuple[float, float]:
    """The locate query window around ``event`` (paper §4.1).

    It grows outward from the event until the nearest other event of the same speaker and
    emotion (exclusive) or the recording boundary, at most ``max_side`` seconds each side,
    so the window holds exactly one matching event.

    >>> e = [Event("A", "Sad", 10, 15, ("1",), "", ()), Event("A", "Sad", 100, 110, ("2",), "", ()),
    ...      Event("B", "Sad", 50, 55, ("3",), "", ())]
    >>> locate_window(e[0], e, 300, max_side=150)
    (0.0, 100.0)
    """
    lo, hi = max(0.0, event.start - max_side), min(duration, event.end + max_side)
    for o in events:
        if o is event or o.speaker != event.speaker or o.emotion != event.emotion:
            continue
        if o.end <= event.start:
            lo = max(lo, o.end)
        elif o.start >= event.end:
            hi = min(hi, o.start)
    return (round(float(lo), 3), round(float(hi), 3))


def find_clusters(events: Sequence[Event], *, min_events: int, max_span: float,
                  max_gap: float = math.inf, exclude: Sequence[str] = ("Neutral",)) -> list[list[Event]]:
    """Clusters of >= ``min_events`` same-speaker, same-emotion events within ``max_span`` s.

    Greedy from the earliest event of each (speaker, emotion); a cluster takes every
    following event that still fits in ``max_span`` and starts at most ``max_gap`` s after
    the previous one ends (so one cluster is one local episode); events are used once.

    >>> ev = [Event("A", "Sad", t, t + 3, (str(t),), "", ()) for t in (0, 40, 80, 200, 240, 300)]
    >>> [[e.start for e in c] for c in find_clusters(ev, min_events=3, max_span=300)]
    [[0, 40, 80, 200, 240]]
    >>> [[e.start for e in c] for c in find_clusters(ev, min_events=3, max_span=300, max_gap=60)]
    [[0, 40, 80], [200, 240, 300]]
    """
    groups: dict[tuple, list[Event]] = {}
    for e in events:
        if e.emotion in exclude:
            continue
        groups.setdefault((e.speaker, e.emotion), []).append(e)
    out: list[list[Event]] = []
    for key in sorted(groups):
        evs = sorted(groups[key], key=lambda e: e.start)
        i = 0
        while i < len(evs):
            j = i
            while (j + 1 < len(evs) and evs[j + 1].end - evs[i].start <= max_span
                   and evs[j + 1].start - evs[j].end <= max_gap):
                j += 1
            if j - i + 1 >= min_events:
                out.append(evs[i:j + 1])
                i = j + 1
            else:
                i += 1
    return sorted(out, key=lambda c: c[0].start)


def cluster_target(cluster: Sequence[Event]) -> Event:
    """The event farthest from the cluster's AVD centroid (ties: the earliest), as in the paper.

    >>> c = [Event("A", "Sad", 0, 1, (), "", (0.2, 0.2, 0.2)), Event("A", "Sad", 5, 6, (), "", (0.2, 0.2, 0.2)),
    ...      Event("A", "Sad", 9, 10, (), "", (0.4, 0.1, 0.2))]
    >>> cluster_target(c).start
    9
    """
    cen = np.mean([e.avd for e in cluster], axis=0)
    dists = [float(np.linalg.norm(np.asarray(e.avd) - cen)) for e in cluster]
    best = max(dists)
    for e, d in zip(cluster, dists):
        if d >= best - 1e-9:
            return e
    return cluster[0]


def pairwise_winner(mean_a: float, mean_b: float, *, tie_delta: float) -> str:
    """``"A"``, ``"B"`` or ``"tie"`` (``|mean_a - mean_b| < tie_delta``; paper: 0.25).

    >>> pairwise_winner(3.5, 3.0, tie_delta=0.25), pairwise_winner(2.0, 2.3, tie_delta=0.25)
    ('A', 'B')
    """
    delta = mean_a - mean_b
    if abs(delta) < tie_delta - 1e-9:
        return "tie"
    return "A" if delta > 0 else "B"


def time_phrase(t: float, step: float = 30.0) -> str:
    """``"around 3 and a half minutes"``: ``t`` rounded to ``step`` seconds, said once
    (the reference code wrote "at around around ...").

    >>> time_phrase(208), time_phrase(61), time_phrase(10), time_phrase(40)
    ('around 3 and a half minutes', 'around 1 minute', 'in the first minute', 'around 30 seconds')
    """
    r = int(round(t / step) * step)
    if r <= 0:
        return "in the first minute"
    if r < 60:
        return f"around {r} seconds"
    m, s = divmod(r, 60)
    unit = "minute" if m == 1 and not s else "minutes"
    if s == 0:
        return f"around {m} {unit}"
    if s == 30:
        return f"around {m} and a half minutes"
    return f"around {m} minutes {s} seconds"


def pair_rounds(n_items: int, n_pairs: int, rng: np.random.Generator, *, max_rounds: int = 200) -> list[tuple[int, int]]:
    """The paper's pairing rule, repeated: shuffle the songs and pair them consecutively so each
    song is used once per round; more rounds until ``n_pairs`` distinct pairs are found.

    >>> pairs = pair_rounds(6, 3, np.random.default_rng(0))
    >>> sorted(i for p in pairs for i in p)       # one round: every song exactly once
    [0, 1, 2, 3, 4, 5]
    """
    pairs: list[tuple[int, int]] = []
    seen: set = set()
    for _ in range(max_rounds):
        order = [int(i) for i in rng.permutation(n_items)]
        for k in range(0, n_items - 1, 2):
            a, b = order[k], order[k + 1]
            key = (min(a, b), max(a, b))
            if key in seen:
                continue
            seen.add(key)
            pairs.append((a, b))
            if len(pairs) >= n_pairs:
                return pairs
        if len(seen) >= n_items * (n_items - 1) // 2:
            break
    return pairs
