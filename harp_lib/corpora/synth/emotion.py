"""Emotion podcasts: multi-speaker conversations with emotional prosody, and the five
emotion query types (state, change, comparison, locate, locate_hard).

A podcast (3 or 4 speakers: ``sizes.speakers``) is a sequence of *chapters*, whose main,
other and third speakers rotate through the podcast's speakers.  A chapter is three 20-30 s *trend scenes* with the
same main speaker M and other speaker O, then (every ``flat_every`` chapters) one *flat scene*:

* trend scene: M says ``sentences_per_half`` sentences in emotion e1, O answers with one
  sentence in emotion eo, M says ``sentences_per_half`` sentences in e2 (e1 != e2), so M's
  arousal/valence/dominance moves between the window's halves (a change query) while M and O
  differ (a comparison query);
* within a chapter e1, e2 and eo are fixed, so (M, e1), (M, e2) and (O, eo) each recur three
  times within ~90 s: clusters for locate_hard;
* flat scene: the chapter's third speaker keeps one emotion (a "none" change query).

Ground truth is then derived from the rendered utterances only, with the rules of
:mod:`harp_lib.corpora.synth.rules` (the same rules the tests check by hand); candidates whose answer
would be ambiguous are dropped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.corpora.synth import rules
from harp_lib.corpora.synth.core import DomainBuild, SynthCache, rng_for
from harp_lib.corpora.synth.text import EMOTION_TEMPLATES, REFERENCE_SENTENCES, TOPICS, fill
from harp_lib.corpora.synth.voices import VOICES, avd_for, prosody, render

__all__ = ["build", "quote_of"]

NON_NEUTRAL = ("Happy", "Sad", "Angry", "Surprise")
SR = 16000


@dataclass
class _Line:
    speaker: str
    emotion: str
    intensity: float
    text: str
    scene: int
    role: str
    topic: str
    jitter: tuple


def quote_of(text: str, others: list[str]) -> str:
    """A 4-12 word clause of ``text`` that appears in no other utterance (else the sentence).

    >>> quote_of("Honestly, the garden turned out wonderful, I loved it!", [])
    'the garden turned out wonderful'
    """
    clauses = [c.strip(" .!?") for c in text.replace("?", ",").replace("!", ",").replace(".", ",").split(",")]
    clauses = [c for c in clauses if len(c.split()) >= 4]
    clauses.sort(key=lambda c: (-len(c.split()), c))
    for c in clauses:
        words = c.split()[:12]
        q = " ".join(words)
        if not any(q.lower() in o.lower() for o in others):
            return q
    return text.strip()


def _pick_sentence(rng, emotion: str, topic: str, used: set) -> str:
    things = TOPICS[topic]
    combos = [(t, th) for t in EMOTION_TEMPLATES[emotion] for th in things]
    order = rng.permutation(len(combos))
    for i in order:
        s = fill(*combos[int(i)])
        if s not in used:
            used.add(s)
            return s
    # every combination used: borrow a thing from another topic
    for tp in sorted(TOPICS):
        for th in TOPICS[tp]:
            for t in EMOTION_TEMPLATES[emotion]:
                s = fill(t, th)
                if s not in used:
                    used.add(s)
                    return s
    raise RuntimeError("sentence bank exhausted")


def _plan_podcast(rid: str, seed: int, sizes: dict, eparams: dict) -> tuple[list[str], list[list[_Line]]]:
    """Speakers and the scenes (lists of lines) of one podcast; no audio yet."""
    rng = rng_for(seed, "emotion", rid, "plan")
    lo, hi = (int(x) for x in sizes.get("speakers", (3, 3)))
    n_spk = int(rng_for(seed, "emotion", rid, "n_speakers").integers(lo, hi + 1)) if hi > lo else lo
    if not 3 <= n_spk <= len(VOICES):
        raise ValueError(f"benchmark.sizes.speakers: {n_spk} speakers per podcast; allowed 3-{len(VOICES)} "
                         f"(the voices of harp_lib/corpora/synth/voices.py)")
    speakers = [str(v) for v in rng.choice(sorted(VOICES), size=n_spk, replace=False)]
    topics = [str(t) for t in rng.permutation(sorted(TOPICS))]
    used: set = set()
    scenes: list[list[_Line]] = []
    k = int(eparams["sentences_per_half"])

    def line(spk, emo, inten, scene, role, topic):
        jit = tuple(round(float(x), 4) for x in rng.normal(0.0, 0.01, 3))
        return _Line(spk, emo, round(float(inten), 3), _pick_sentence(rng, emo, topic, used),
                     scene, role, topic, jit)

    n_ch = int(sizes["chapters"])
    chapter_emos = [[str(e) for e in rng.permutation(NON_NEUTRAL)] for _ in range(n_ch)]
    for c in range(n_ch):
        m, o, h = (speakers[(c + j) % n_spk] for j in range(3))
        emos = chapter_emos[c]
        e1, e2, eo = emos[0], emos[1], emos[2]
        i1, i2, io = (float(rng.uniform(0.8, 1.0)) for _ in range(3))
        for _ in range(3):
            topic = topics[len(scenes) % len(topics)]
            sc = len(scenes)
            lines = [line(m, e1, i1, sc, "main", topic) for _ in range(k)]
            lines.append(line(o, eo, io, sc, "other", topic))
            lines += [line(m, e2, i2, sc, "main", topic) for _ in range(k)]
            scenes.append(lines)
        if c % int(eparams["flat_every"]):
            continue
        # flat scene: the third speaker keeps one emotion; the chapter's main speaker answers neutrally
        topic = topics[len(scenes) % len(topics)]
        sc = len(scenes)
        # h is the next chapter's O: a flat emotion equal to its eo would merge into one long run
        nxt_eo = chapter_emos[c + 1][2] if c + 1 < n_ch else None
        ef = str(rng.choice(("Neutral", "Neutral", emos[3])))
        if ef == nxt_eo:
            ef = "Neutral"
        fi = float(rng.uniform(0.8, 1.0)) if ef != "Neutral" else 0.0
        lines = [line(h, ef, fi, sc, "main", topic) for _ in range(k)]
        lines.append(line(m, "Neutral", 0.0, sc, "other", topic))
        lines += [line(h, ef, fi, sc, "main", topic) for _ in range(k)]
        scenes.append(lines)
    return speakers, scenes


def _assemble(rid: str, seed: int, scenes, cache: SynthCache, params: dict):
    """Render every line and place it on the timeline; returns wave, per-line spans, scene spans."""
    rng = rng_for(seed, "emotion", rid, "timing")
    pieces, spans, scene_spans = [], [], []
    t = 1.0
    prev_spk = None
    for lines in scenes:
        s0 = t
        for ln in lines:
            if prev_spk is not None and ln.speaker != prev_spk:
                t += 0.35 + float(rng.uniform(0.0, 0.3))
            w = render(VOICES[ln.speaker], ln.text, ln.emotion, ln.intensity, cache)
            start = round(t, 3)
            pieces.append((int(round(start * SR)), w))
            spans.append((start, round(start + len(w) / SR, 3)))
            t = start + len(w) / SR + prosody(ln.emotion, ln.intensity)["pause"] * float(rng.uniform(0.8, 1.2))
            prev_spk = ln.speaker
        scene_spans.append((round(s0, 3), spans[-1][1]))
        t += 1.0
    total = int(round((t + 0.5) * SR))
    wave = np.zeros(total, dtype=np.float32)
    for s, w in pieces:
        wave[s:s + len(w)] += w
    wave += (rng.standard_normal(total) * 10 ** (params["noise_floor_db"] / 20)).astype(np.float32)
    return wave, spans, scene_spans


def _window_text(t0: float, t1: float) -> str:
    return f"From {t0:g} to {t1:g} seconds"


def _floor1(x: float) -> float:
    return math.floor(x * 10) / 10


def _ceil1(x: float) -> float:
    return math.ceil(x * 10) / 10


def _spread_pick(cands: list, n: int) -> list:
    """Up to ``n`` candidates spread evenly over the (time-sorted) list (stratified)."""
    if len(cands) <= n:
        return list(cands)
    idx = np.unique(np.round(np.linspace(0, len(cands) - 1, n)).astype(int))
    return [cands[int(i)] for i in idx]


_QUERY_TYPES = ("state", "change", "comparison", "locate", "locate_hard")


def build(seed: int, params: dict, cache: SynthCache, *, progress: bool = True) -> DomainBuild:
    """Build every podcast of the profile: audio, references, GT segments and queries."""
    sizes, ep = params["sizes"], params["emotion"]
    out = DomainBuild("emotion")
    qcount: dict[str, int] = {}
    rids = [f"podcast_{i + 1:02d}" for i in range(int(sizes["podcasts"]))]
    for rid in tqdm(rids, desc="emotion podcasts", disable=not progress):
        speakers, scenes = _plan_podcast(rid, seed, sizes, ep)
        wave, spans, scene_spans = _assemble(rid, seed, scenes, cache, params)
        duration = round(len(wave) / SR, 3)
        lines = [ln for sc in scenes for ln in sc]
        rel = f"recordings/{rid}.wav"
        out.audio[rel] = wave
        out.recordings.append(Recording(id=rid, domain="emotion", audio_path=rel, duration=duration,
                                        custom={"speakers": speakers, "n_scenes": len(scenes),
                                                "topics": sorted({ln.topic for ln in lines})}))
        segs, utts = _podcast_segments(rid, lines, spans)
        out.segments += segs
        pc = _Podcast(rid, seed, cache, params, out, lines, utts, duration)
        pc.speaker_refs(speakers)
        # ---- queries ---------------------------------------------------------------
        cap = int(sizes["max_per_type"])
        qs: dict[str, list] = {t: [] for t in _QUERY_TYPES}
        for sc, (lines_sc, (s0, s1)) in enumerate(zip(scenes, scene_spans)):
            _scene_queries(pc, sc, lines_sc, _floor1(s0), _ceil1(s1), qs)
        qs["state"] = _state_queries(pc, cap)
        events = rules.find_events(utts, max_gap=ep["event_max_gap_sec"])
        qs["locate"] = _locate_queries(pc, events)
        qs["locate_hard"] = _locate_hard_queries(pc, events)
        for qt in _QUERY_TYPES:
            for q in _spread_pick(qs[qt], cap):
                qcount[qt] = qcount.get(qt, 0) + 1
                out.queries.append(Query(query_id=f"{qt}-{qcount[qt]:04d}", domain="emotion", **q))
    return out


def _podcast_segments(rid: str, lines: list, spans: list) -> tuple[list, list]:
    """Ground-truth segments of one podcast and the rule utterances they make."""
    segs, utts = [], []
    for n, (ln, (s, e)) in enumerate(zip(lines, spans), start=1):
        a, v, d = avd_for(ln.emotion, ln.intensity, np.array(ln.jitter))
        sid = f"{rid}_{n:04d}"
        segs.append(Segment(id=sid, recording_id=rid, start=s, end=e, speaker=ln.speaker, text=ln.text,
                            labels={"primary": ln.emotion, "scores": {ln.emotion: 1.0},
                                    "arousal": a, "valence": v, "dominance": d},
                            source="gt", custom={"scene": ln.scene, "role": ln.role, "topic": ln.topic,
                                                 "intensity": ln.intensity}))
        utts.append(rules.Utt(sid, ln.speaker, s, e, ln.emotion, (a, v, d), ln.text))
    return segs, utts


@dataclass
class _Podcast:
    """One podcast while its queries are written: utterances and reference clips (rendered
    outside the recording, into ``out.audio``)."""
    rid: str
    seed: int
    cache: SynthCache
    params: dict
    out: DomainBuild
    lines: list
    utts: list
    duration: float
    spk_ref: dict = field(default_factory=dict)
    emo_ref_cache: dict = field(default_factory=dict)

    def __post_init__(self):
        self.texts = [u.text for u in self.utts]
        self.used = set(self.texts)
        self.unused_topics = sorted(set(TOPICS) - {ln.topic for ln in self.lines}) or sorted(TOPICS)

    def speaker_refs(self, speakers) -> None:
        rrng = rng_for(self.seed, "emotion", self.rid, "refs")
        for spk in speakers:
            sent = REFERENCE_SENTENCES[int(rrng.integers(len(REFERENCE_SENTENCES)))]
            relr = f"references/speaker_{self.rid}_{spk}.wav"
            self.out.audio[relr] = render(VOICES[spk], sent, "Neutral", 0.0, self.cache)
            self.spk_ref[spk] = relr

    def emo_ref(self, emotion: str, not_speaker: str) -> str:
        rid = self.rid
        others = [v for v in sorted(VOICES) if v != not_speaker]
        voice = others[rules.stable_int(f"{rid}/{emotion}/{not_speaker}") % len(others)]
        key = (emotion, voice)
        if key not in self.emo_ref_cache:
            erng = rng_for(self.seed, "emotion", rid, "emoref", emotion, voice)
            topic = self.unused_topics[int(erng.integers(len(self.unused_topics)))]
            sent = _pick_sentence(erng, emotion, topic, self.used)
            relr = f"references/emotion_{rid}_{emotion}_{voice}.wav"
            self.out.audio[relr] = render(VOICES[voice], sent, emotion, 1.0, self.cache)
            self.emo_ref_cache[key] = relr
        return self.emo_ref_cache[key]

    def quote(self, text: str) -> str:
        return quote_of(text, [x for x in self.texts if x != text])


def _scene_queries(pc: _Podcast, sc: int, lines_sc: list, t0: float, t1: float, qs: dict) -> None:
    """change + comparison: one window per scene."""
    ep, utts, rid = pc.params["emotion"], pc.utts, pc.rid
    main = lines_sc[0].speaker
    other = next(ln.speaker for ln in lines_sc if ln.speaker != main)
    topic = lines_sc[0].topic
    flat = lines_sc[0].emotion == lines_sc[-1].emotion
    best = None
    for dim in ("arousal", "valence", "dominance"):
        hm = rules.half_means(utts, main, dim, t0, t1)
        if hm is None:
            continue
        if best is None or (abs(hm[2]) < abs(best[1][2]) if flat else abs(hm[2]) > abs(best[1][2])):
            best = (dim, hm)
    if best is not None:
        dim, (h1, h2, delta) = best
        direction = rules.trend_direction(delta, min_delta=ep["trend_min_delta"], flat_max=ep["flat_max_delta"])
        if direction is not None and (direction == "none") == flat:
            gt = {"direction": direction, "dimension": dim, "delta": round(delta, 3),
                  "half1": round(h1, 3), "half2": round(h2, 3), "t0": t0, "t1": t1}
            ids = tuple(u.id for u in utts if u.speaker == main and u.end > t0 and u.start < t1)
            qs["change"].append(dict(
                recording_id=rid, query_type="change",
                text=(f"Speaker: [audio example]. {_window_text(t0, t1)}, how did this speaker's "
                      f"{dim} change while discussing {topic}?"),
                ground_truth=gt, judge_info={"type": "trend", **gt}, references={"A": pc.spk_ref[main]},
                gt_segment_ids=ids, time_ref=t0, custom={"topic": topic, "speaker": main, "scene": sc}))
    a_spk, b_spk = sorted((main, other))
    comp = rules.comparison(utts, a_spk, b_spk, t0, t1, min_spread=ep["comparison_min_spread"])
    if comp is not None:
        dim, va, vb, winner = comp
        gt = {"winner": winner, "dimension": dim, "values": {"A": va, "B": vb}, "t0": t0, "t1": t1}
        ids = tuple(u.id for u in utts if u.speaker in (a_spk, b_spk) and u.end > t0 and u.start < t1)
        qs["comparison"].append(dict(
            recording_id=rid, query_type="comparison",
            text=(f"Speaker A: [A's audio example]. Speaker B: [B's audio example]. "
                  f"{_window_text(t0, t1)}, discussing {topic}, which speaker had higher {dim}, A or B?"),
            ground_truth=gt, judge_info={"type": "speaker_id", **gt},
            references={"A": pc.spk_ref[a_spk], "B": pc.spk_ref[b_spk]}, gt_segment_ids=ids, time_ref=t0,
            custom={"topic": topic, "speakers": {"A": a_spk, "B": b_spk}, "scene": sc}))


def _state_queries(pc: _Podcast, cap: int) -> list[dict]:
    """state: balanced over emotions, one utterance at a time."""
    srng = rng_for(pc.seed, "emotion", pc.rid, "state")
    by_emo: dict[str, list] = {}
    for u, ln in zip(pc.utts, pc.lines):
        by_emo.setdefault(u.emotion, []).append((u, ln))
    pools = {e: [by_emo[e][int(i)] for i in srng.permutation(len(by_emo[e]))] for e in sorted(by_emo)}
    picked = []
    while len(picked) < cap and any(pools.values()):
        for e in sorted(pools):
            if pools[e] and len(picked) < cap:
                picked.append(pools[e].pop())
    qs = []
    for u, ln in sorted(picked, key=lambda p: p[0].start):
        q = pc.quote(u.text)
        phrase = rules.time_phrase(u.start, pc.params["time_round_sec"])
        gt = {"emotion": u.emotion, "arousal": u.avd[0], "valence": u.avd[1], "dominance": u.avd[2]}
        qs.append(dict(
            recording_id=pc.rid, query_type="state",
            text=(f"Speaker: [audio example]. {phrase[0].upper() + phrase[1:]}, this speaker was talking "
                  f"about {ln.topic} and mentioned \"{q}\". Which emotion did they show?"),
            ground_truth=gt, judge_info={"type": "categorical", "primary": u.emotion, "secondary": []},
            references={"A": pc.spk_ref[u.speaker]}, gt_segment_ids=(u.id,), time_ref=u.start,
            custom={"topic": ln.topic, "speaker": u.speaker, "quote": q}))
    return qs


def _locate_queries(pc: _Podcast, events: list) -> list[dict]:
    """locate: one same-speaker same-emotion event in its window."""
    ep = pc.params["emotion"]
    text_of = {u.id: u.text for u in pc.utts}
    qs = []
    for ev in events:
        if ev.emotion == "Neutral":
            continue
        lo, hi = rules.locate_window(ev, events, pc.duration, max_side=ep["locate_max_side_sec"])
        w0, w1 = _ceil1(lo), _floor1(hi)
        q = pc.quote(ev.quote)
        gt = {"t0": ev.start, "t1": ev.end, "emotion": ev.emotion, "quote": q}
        qs.append(dict(
            recording_id=pc.rid, query_type="locate",
            text=(f"Speaker: [speaker example]. Emotion: [emotion example]. {_window_text(w0, w1)}, when did "
                  f"this speaker show the same emotion as the clip, and what were they saying?"),
            ground_truth=gt,
            judge_info={"type": "time_and_quote", "t0": ev.start, "t1": ev.end, "emotion": ev.emotion,
                        "seg_text": " ".join(text_of[i] for i in ev.utt_ids)},
            references={"A": pc.spk_ref[ev.speaker], "E": pc.emo_ref(ev.emotion, ev.speaker)},
            gt_segment_ids=ev.utt_ids, time_ref=ev.start,
            custom={"speaker": ev.speaker, "window": [w0, w1]}))
    return qs


def _locate_hard_queries(pc: _Podcast, events: list) -> list[dict]:
    """locate_hard: clusters of >= 3 same-speaker same-emotion events."""
    ep = pc.params["emotion"]
    text_of = {u.id: u.text for u in pc.utts}
    qs = []
    for cl in rules.find_clusters(events, min_events=int(ep["cluster_min_events"]),
                                  max_span=float(ep["cluster_max_span_sec"]),
                                  max_gap=float(ep["cluster_max_gap_sec"])):
        tgt = rules.cluster_target(cl)
        w0 = _ceil1(max(0.0, cl[0].start - ep["cluster_pad_sec"]))
        w1 = _floor1(min(pc.duration, cl[-1].end + ep["cluster_pad_sec"]))
        inwin = [e for e in events if e.emotion == tgt.emotion and e.start >= w0 and e.end <= w1]
        q = pc.quote(tgt.quote)
        gt = {"t0": tgt.start, "t1": tgt.end, "emotion": tgt.emotion, "quote": q, "n_events": len(inwin),
              "events": [{"speaker": e.speaker, "t0": e.start, "t1": e.end,
                          "quote": pc.quote(e.quote)} for e in inwin]}
        qs.append(dict(
            recording_id=pc.rid, query_type="locate_hard",
            text=(f"Emotion: [audio example]. {_window_text(w0, w1)}, when did someone show the same "
                  f"emotion as the clip, and what were they saying?"),
            ground_truth=gt,
            judge_info={"type": "time_and_quote", "t0": tgt.start, "t1": tgt.end, "emotion": tgt.emotion,
                        "seg_text": " ".join(text_of[i] for i in tgt.utt_ids), "n_events": len(inwin)},
            references={"E": pc.emo_ref(tgt.emotion, tgt.speaker)},
            gt_segment_ids=tuple(i for e in inwin for i in e.utt_ids), time_ref=tgt.start,
            custom={"speaker": tgt.speaker, "window": [w0, w1], "cluster_size": len(cl)}))
    return qs
