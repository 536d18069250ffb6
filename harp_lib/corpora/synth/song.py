"""Song medleys: real scores from the music21 corpus, arranged into 2-5 min songs, rendered
with fluidsynth and a General MIDI soundfont, degraded by documented production choices,
joined with 3 s crossfades; plus the three pairwise aesthetic query types (time, position, audio).

Aesthetic ground truth is a documented function of the production choices
(:func:`aesthetic_scores`): every song starts from :data:`BASE_SCORE` on each SongEval
dimension and loses :data:`PENALTIES` points per severity step of each degradation.  All
degradations are audible: hiss/hum noise, clipping, low-pass muffling, timing jitter,
wrong notes, an unbalanced mix (buried melody, booming bass) and clashing instrumentation.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from harp_lib.core import audio
from harp_lib.core.labels import AESTHETIC_DIMENSIONS, tier_of
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.tasks.song import question
from harp_lib.core.timespan import format_time, ordinal
from harp_lib.corpora.synth import rules
from harp_lib.corpora.synth.core import DomainBuild, SynthCache, SynthError, rng_for
from harp_lib.corpora.synth.voices import normalize_rms

__all__ = ["FACTORS", "PENALTIES", "BASE_SCORE", "aesthetic_scores", "build", "soundfont", "WORKS"]

SR = 16000
#: Production degradations, each with severity 0 (absent), 1 (noticeable) or 2 (strong).
FACTORS = ("noise", "clipping", "muffle", "jitter", "wrong_notes", "imbalance", "clash")
BASE_SCORE = 4.6
#: Points lost per severity step: {factor: {dimension: points}}.
PENALTIES: dict[str, dict[str, float]] = {
    "noise": {"Clarity": 1.35, "Naturalness": 0.45, "Musicality": 0.15},
    "clipping": {"Clarity": 0.9, "Naturalness": 1.05, "Musicality": 0.3},
    "muffle": {"Clarity": 1.2, "Memorability": 0.3, "Naturalness": 0.3},
    "jitter": {"Coherence": 0.9, "Musicality": 0.9, "Naturalness": 0.75, "Memorability": 0.3},
    "wrong_notes": {"Musicality": 1.35, "Coherence": 0.75, "Memorability": 0.75},
    "imbalance": {"Clarity": 0.6, "Memorability": 0.75, "Coherence": 0.3},
    "clash": {"Coherence": 1.05, "Naturalness": 0.75, "Musicality": 0.45},
}
#: GM programs per ensemble (part i plays program i mod len).
ENSEMBLES: dict[str, tuple[int, ...]] = {
    "strings": (40, 41, 42, 43), "piano": (0, 0, 0, 0), "organ": (19, 19, 19, 19),
    "winds": (73, 71, 69, 70), "brass": (56, 60, 57, 58), "guitar": (24, 25, 25, 32),
    "choir": (52, 52, 53, 32), "mallets": (11, 12, 13, 32), "harpsichord": (6, 6, 6, 6),
}
CLASH_PROGRAMS = (80, 114, 10, 105, 62, 99, 118, 84)
#: Multi-part works (movements) from the music21 corpus; Bach chorales are added from the corpus.
WORKS: tuple[str, ...] = (
    "mozart/k155/movement1", "mozart/k156/movement1", "mozart/k458/movement1", "mozart/k545/movement1_exposition",
    "haydn/opus1no1/movement1", "haydn/opus74no1/movement1", "haydn/opus74no1/movement3",
    "beethoven/opus18no1/movement1", "beethoven/opus18no1/movement3", "joplin/maple_leaf_rag",
    "corelli/opus3no1/1grave", "handel/rinaldo/Lascia_chio_pianga", "schubert/Lindenbaum",
    "verdi/laDonnaEMobile", "mozart/k458/movement3", "haydn/opus1no1/movement3",
)


def aesthetic_scores(production: dict) -> dict[str, float]:
    """SongEval-style scores (1-5, quarter steps) from production severities.

    >>> aesthetic_scores({})["Clarity"]
    4.5
    >>> aesthetic_scores({"noise": 2})["Clarity"]          # 4.6 - 2 * 1.35 = 1.9 -> 2.0
    2.0
    """
    out = {}
    for d in AESTHETIC_DIMENSIONS:
        v = BASE_SCORE - sum(PENALTIES[f].get(d, 0.0) * int(production.get(f, 0)) for f in FACTORS)
        out[d] = float(min(5.0, max(1.0, round(v * 4) / 4)))
    return out


def soundfont() -> Path:
    """The General MIDI soundfont ($HARP_SOUNDFONT, else TimGM6mb / default-GM / FluidR3)."""
    cands = [os.environ.get("HARP_SOUNDFONT"), "/usr/share/sounds/sf2/TimGM6mb.sf2",
             "/usr/share/sounds/sf2/default-GM.sf2", "/usr/share/sounds/sf2/FluidR3_GM.sf2"]
    for c in cands:
        if c and Path(c).exists():
            return Path(c)
    raise SynthError("no General MIDI soundfont found; apt-get install timgm6mb-soundfont "
                     "or set HARP_SOUNDFONT to an .sf2 file")


def _work_pool() -> list[str]:
    from music21 import corpus  # heavy: music21 (~0.3 s)
    chorales = sorted({re.sub(r"\.(mxl|xml|krn)$", "", str(p).split("corpus/")[-1])
                       for p in corpus.getComposer("bach") if re.search(r"bwv\d+\.\d+\.(mxl|xml)$", str(p))})
    return list(WORKS) + chorales


def _notes_of(work: str) -> list[tuple[int, float, float, int]]:
    """(part, offset qL, duration qL, midi pitch) of every note of a corpus work."""
    from music21 import corpus  # heavy: music21 (~0.3 s)
    s = corpus.parse(work)
    notes = []
    for i, part in enumerate(s.parts):
        for n in part.flatten().notes:
            if float(n.quarterLength) <= 0:
                continue
            for p in n.pitches:
                notes.append((i, float(n.offset), float(n.quarterLength), int(p.midi)))
    if not notes:
        raise SynthError(f"music21 corpus work {work!r} has no notes")
    return sorted(notes, key=lambda x: (x[1], x[0], x[3]))


def _render_midi(pm, timeout: float = 300.0) -> np.ndarray:
    exe = shutil.which("fluidsynth")
    if not exe:
        raise SynthError("fluidsynth is not installed (apt-get install fluidsynth); it renders the songs")
    with tempfile.TemporaryDirectory(prefix="harp_song_") as tmp:
        mid, wav = Path(tmp) / "s.mid", Path(tmp) / "s.wav"
        pm.write(str(mid))
        try:
            r = subprocess.run([exe, "-ni", "-q", "-F", str(wav), "-r", str(SR), "-g", "0.5",
                                str(soundfont()), str(mid)], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SynthError(f"fluidsynth did not finish within {timeout:.0f} s") from None
        if r.returncode != 0 or not wav.exists():
            raise SynthError(f"fluidsynth failed: {r.stderr.decode(errors='replace')[-500:]}")
        return audio.load(wav, sr=SR)


def _arrange(plan: dict, notes) -> "object":
    """The song as a pretty_midi object: the excerpt repeated with alternating ensembles and
    transpositions until the target length, with the MIDI-level degradations applied."""
    import pretty_midi  # heavy: pretty_midi
    rng = np.random.default_rng(plan["rng_seed"])
    prod = plan["production"]
    spq = 60.0 / plan["bpm"]
    L = plan["excerpt_ql"]
    exc = [n for n in notes if n[1] < L]
    n_parts = max(n[0] for n in exc) + 1
    pm = pretty_midi.PrettyMIDI(initial_tempo=plan["bpm"])
    insts: dict[int, object] = {}
    jit = {0: 0.0, 1: 0.03, 2: 0.07}[prod.get("jitter", 0)]
    wrong = {0: 0.0, 1: 0.06, 2: 0.16}[prod.get("wrong_notes", 0)]
    imb = prod.get("imbalance", 0)
    clash = prod.get("clash", 0)
    target = plan["target_sec"]
    r = 0
    while r * L * spq < target:
        ens = ENSEMBLES[plan["ensembles"][r % len(plan["ensembles"])]]
        trans = plan["transpose"][r % len(plan["transpose"])]
        for part, off, dur, pitch in exc:
            start = (r * L + off) * spq
            if start >= target - 0.5:
                continue
            prog = ens[part % len(ens)]
            if clash:
                prog = CLASH_PROGRAMS[(part + (r if clash > 1 else 0)) % len(CLASH_PROGRAMS)]
            vel = 92 if part == 0 else 74
            if imb and part == 0:
                vel = int(vel * (1 - 0.35 * imb))
            elif imb and part == n_parts - 1:
                vel = min(127, int(vel * (1 + 0.3 * imb)))
            p = pitch + trans
            if wrong and rng.random() < wrong:
                p += int(rng.choice([-1, 1, -6, 6]))
            st = max(0.0, start + (rng.normal(0, jit) if jit else 0.0))
            en = min(target, max(st + 0.05, (r * L + off + dur) * spq * 0.98 + (rng.normal(0, jit) if jit else 0.0)))
            if prog not in insts:
                insts[prog] = pretty_midi.Instrument(program=prog)
            insts[prog].notes.append(pretty_midi.Note(velocity=int(max(1, min(127, vel))),
                                                      pitch=int(min(127, max(0, p))), start=st, end=en))
        r += 1
    for prog in sorted(insts):
        pm.instruments.append(insts[prog])
    return pm


def _produce(wave: np.ndarray, plan: dict) -> np.ndarray:
    """Audio-level degradations (muffle, clipping, noise), fixed length, fades, -20 dBFS."""
    prod = plan["production"]
    n = int(round(plan["target_sec"] * SR))
    w = np.zeros(n, np.float32)
    w[: min(n, len(wave))] = wave[:n]
    w = normalize_rms(w, -20.0)
    if prod.get("muffle"):
        hz = {1: 2200.0, 2: 900.0}[prod["muffle"]]
        from scipy.signal import butter, sosfilt  # heavy: scipy.signal (~0.8 s), and `harp --help` imports this module
        w = sosfilt(butter(4, hz, "lowpass", fs=SR, output="sos"), w).astype(np.float32)
        w = normalize_rms(w, -20.0)
    if prod.get("clipping"):
        drive = {1: 12.0, 2: 22.0}[prod["clipping"]]
        w = np.clip(w * 10 ** (drive / 20), -0.5, 0.5).astype(np.float32)
        w = normalize_rms(w, -20.0)
    if prod.get("noise"):
        snr = {1: 16.0, 2: 6.0}[prod["noise"]]
        rng = np.random.default_rng(plan["rng_seed"] + 1)
        t = np.arange(n) / SR
        nz = rng.standard_normal(n) + 2.0 * np.sin(2 * np.pi * 50 * t)   # hiss + mains hum
        nz *= np.sqrt(np.mean(w.astype(np.float64) ** 2)) / np.sqrt(np.mean(nz ** 2)) * 10 ** (-snr / 20)
        w = (w + nz).astype(np.float32)
    fi, fo = int(0.05 * SR), int(2.0 * SR)
    w[:fi] *= np.linspace(0, 1, fi, dtype=np.float32)
    w[-fo:] *= np.linspace(1, 0, fo, dtype=np.float32)
    return normalize_rms(w, -20.0)


def _song_plan(rid: str, idx: int, work: str, badness: int, seed: int, sizes: dict, notes_len: float) -> dict:
    rng = rng_for(seed, "song", rid, "song", idx)
    lo, hi = sizes["song_sec"]
    ens = [str(e) for e in rng.choice(sorted(ENSEMBLES), size=2, replace=False)]
    prod = {}
    for f in sorted(str(x) for x in rng.choice(FACTORS, size=badness, replace=False)):
        prod[f] = int(rng.integers(1, 3))
    L = float(min(notes_len, float(rng.choice([32.0, 48.0, 64.0]))))
    return {"work": work, "excerpt_ql": L, "bpm": int(rng.integers(72, 133)), "ensembles": ens,
            "transpose": [0, 0, int(rng.choice([-2, 2, 3])), 0],
            "target_sec": float(int(rng.integers(int(lo), int(hi) + 1))),
            "production": prod, "rng_seed": int(rng.integers(2 ** 31))}


def _time_ref(span, step: float = 30.0) -> float:
    """A multiple of ``step`` with ±step inside the song (the middle option), else its middle."""
    opts = [k * step for k in range(int(span.start // step), int(span.end // step) + 2)
            if k * step - step >= span.start and k * step + step <= span.end]
    if opts:
        return float(opts[len(opts) // 2])
    return float(round((span.start + span.end) / 2))


def _say_time(t: float, step: float) -> str:
    if abs(t / step - round(t / step)) < 1e-9:
        return rules.time_phrase(t, step)
    return f"around {format_time(t)}"


def build(seed: int, params: dict, cache: SynthCache, *, progress: bool = True) -> DomainBuild:
    """Build every medley: audio, 5 s snippets, one GT segment per song, pairwise queries."""
    sizes = params["sizes"]
    out = DomainBuild("song")
    n_med, n_songs = int(sizes["medleys"]), int(sizes["songs"])
    picks = _pick_works(seed, n_med * n_songs)
    qn = {"time": 0, "position": 0, "audio": 0}
    notes_cache: dict[str, list] = {}
    bar = tqdm(total=n_med * n_songs, desc="songs", disable=not progress)
    for m in range(n_med):
        rid = f"medley_{m + 1:02d}"
        wave, spans, plans = _render_medley(rid, picks[m * n_songs:(m + 1) * n_songs], seed, params, cache,
                                            notes_cache, bar)
        rel = f"recordings/{rid}.wav"
        out.audio[rel] = wave
        duration = round(len(wave) / SR, 3)
        out.recordings.append(Recording(id=rid, domain="song", audio_path=rel, duration=duration,
                                        custom={"n_songs": n_songs, "works": [p["work"] for p in plans]}))
        segs, snippets, trefs, scores = _song_segments(rid, wave, plans, spans, params, out)
        out.segments += segs
        _pair_queries(rid, segs, snippets, trefs, scores, seed, params, qn, out)
    bar.close()
    return out


def _pick_works(seed: int, n: int) -> list:
    """``n`` works: alternate chamber works and chorales so medleys vary in texture."""
    pool = _work_pool()
    prng = rng_for(seed, "song", "works")
    works_idx = [int(i) for i in prng.permutation(len(WORKS))]
    chor_idx = [int(i) for i in prng.permutation(len(pool) - len(WORKS))]
    picks = []
    for k in range(n):
        if k % 2 == 0 and works_idx:
            picks.append(pool[works_idx.pop()])
        else:
            picks.append(pool[len(WORKS) + chor_idx.pop()])
    return picks


def _render_medley(rid: str, works: list, seed: int, params: dict, cache: SynthCache, notes_cache: dict,
                   bar) -> tuple:
    """Render the songs of one medley and crossfade them, with the noise floor: ``(wave, spans, plans)``."""
    sizes, n_songs = params["sizes"], len(works)
    mrng = rng_for(seed, "song", rid, "quality")
    levels = [i % 5 for i in range(n_songs)]
    levels = [levels[int(i)] for i in mrng.permutation(n_songs)]
    waves, plans = [], []
    for i, work in enumerate(works):
        if work not in notes_cache:
            notes_cache[work] = None  # parsed lazily only on a cache miss
        # the excerpt length needs the score length: cheap for a cache hit via a key on the work
        plan = _song_plan(rid, i, work, levels[i], seed, sizes, score_length(work, cache, notes_cache))
        waves.append(render_song(plan, cache, notes_cache))
        plans.append(plan)
        bar.update(1)
    wave, spans = audio.crossfade_concat(waves, SR, fade=float(params["crossfade_sec"]))
    nrng = rng_for(seed, "song", rid, "floor")
    wave = wave + (nrng.standard_normal(len(wave)) * 10 ** (params["noise_floor_db"] / 20)).astype(np.float32)
    return wave, spans, plans


def _song_segments(rid: str, wave, plans: list, spans: list, params: dict, out: DomainBuild) -> tuple:
    """One GT segment per song and its snippet (into ``out.audio``): ``(segs, snippets, trefs, scores)``."""
    segs, snippets, trefs, scores = [], [], [], []
    half = float(params["snippet_sec"]) / 2
    for i, (plan, sp) in enumerate(zip(plans, spans), start=1):
        sc = aesthetic_scores(plan["production"])
        overall = round(float(np.mean(list(sc.values()))), 3)
        sid = f"{rid}_{i:04d}"
        segs.append(Segment(id=sid, recording_id=rid, start=sp.start, end=sp.end, speaker=f"SONG_{i:02d}",
                            text="", labels={"primary": tier_of(overall), "scores": sc, "overall": overall},
                            source="gt", custom={"song_index": i, "work": plan["work"], "bpm": plan["bpm"],
                                                 "ensembles": plan["ensembles"],
                                                 "production": {f: int(plan["production"].get(f, 0)) for f in FACTORS}}))
        mid = (sp.start + sp.end) / 2
        clip = audio.crop(wave, type(sp)(mid - half, mid + half), SR)
        relr = f"references/snippet_{rid}_{i:02d}.wav"
        out.audio[relr] = clip
        snippets.append(relr)
        trefs.append(_time_ref(sp, float(params["time_round_sec"])))
        scores.append((sc, overall))
    return segs, snippets, trefs, scores


def _pair_queries(rid: str, segs: list, snippets: list, trefs: list, scores: list, seed: int, params: dict,
                  qn: dict, out: DomainBuild) -> None:
    """The pairwise time / position / audio queries of one medley (numbered on from ``qn``)."""
    sizes, step = params["sizes"], float(params["time_round_sec"])
    by_type = _pairs_by_type(len(segs), {qt: int(sizes["pairs"][qt]) for qt in ("time", "position", "audio")},
                             seed, rid)
    for qt in ("time", "position", "audio"):
        for a, b in by_type[qt]:
            (sa, ma), (sb, mb) = scores[a], scores[b]
            winner = rules.pairwise_winner(ma, mb, tie_delta=float(params["tie_delta"]))
            gt = {"winner": winner, "delta": round(ma - mb, 3), "mean_a": ma, "mean_b": mb}
            if qt == "time":
                text = question("time_synth", _say_time(trefs[a], step), _say_time(trefs[b], step))
                refs = {}
            elif qt == "position":
                text = question("position", ordinal(a + 1), ordinal(b + 1))
                refs = {}
            else:
                text = question("audio")
                refs = {"A": snippets[a], "B": snippets[b]}
            qn[qt] += 1
            out.queries.append(Query(
                query_id=f"{qt}-{qn[qt]:04d}", domain="song", recording_id=rid, query_type=qt, text=text,
                ground_truth=gt,
                judge_info={"type": "pairwise", "song_a": a + 1, "song_b": b + 1, "scores_a": sa, "scores_b": sb},
                references=refs, gt_segment_ids=(segs[a].id, segs[b].id), time_ref=trefs[a],
                custom={"song_a": {"index": a + 1, "time_ref": trefs[a]},
                        "song_b": {"index": b + 1, "time_ref": trefs[b]}}))


def _pairs_by_type(n_songs: int, counts: dict, seed: int, rid: str) -> dict:
    """Song pairs per query type.  When the medley has enough distinct pairs, one pool of
    distinct pairs (the paper's pairing rounds) is split between the types, so time, position
    and audio queries ask about *different* pairs (a column difference then measures the
    reference method, not the pairs); otherwise each type draws its own pairs.

    >>> p = _pairs_by_type(20, {"time": 5, "position": 5, "audio": 5}, 0, "m")
    >>> len({x for v in p.values() for x in v})
    15
    """
    total = sum(counts.values())
    if n_songs * (n_songs - 1) // 2 >= total:
        pool = rules.pair_rounds(n_songs, total, rng_for(seed, "song", rid, "pairs"))
        out, k = {}, 0
        for qt, n in counts.items():
            out[qt], k = pool[k:k + n], k + n
        return out
    return {qt: rules.pair_rounds(n_songs, n, rng_for(seed, "song", rid, "pairs", qt)) for qt, n in counts.items()}


def score_length(work: str, cache: SynthCache, notes_cache: dict) -> float:
    """Length (quarter notes) of a corpus work's score, cached (a cache hit parses nothing)."""
    return float(cache.get("score_len", {"work": work}, lambda: np.array(
        [max(o + d for _, o, d, _ in _load(notes_cache, work))], np.float32))[0])


def render_song(plan: dict, cache: SynthCache, notes_cache: dict) -> np.ndarray:
    """The produced song of ``plan`` (arranged, rendered with fluidsynth, degraded), cached by plan."""
    return cache.get("song", {"plan": plan, "sf2": soundfont().name},
                     lambda: _produce(_render_midi(_arrange(plan, _load(notes_cache, plan["work"]))), plan))


def _load(notes_cache: dict, work: str):
    if notes_cache.get(work) is None:
        notes_cache[work] = _notes_of(work)
    return notes_cache[work]
