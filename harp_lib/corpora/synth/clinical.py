"""Clinical consultations: doctor-patient dialogues with reported and/or exhibited
respiratory symptoms, and the two yes/no query types (reported = Semantic, exhibited = Acoustic).

Each consultation belongs to one group (names follow the reference annotations):

========================== =========================================== ======== =========
group                      what happens                                reported exhibited
========================== =========================================== ======== =========
RES_SELF_ACOUSTIC          patient reports a symptom and coughs/sneezes Yes      Yes
RES_SELF_SEMANTIC          patient reports a symptom, no sounds         Yes      No
RES_ACOUSTIC_ONLY          other complaint, but the patient coughs      No       Yes
RES_PROXY_SPEAKER_COUGH    parent reports the child's cough and coughs  Yes      Yes
RES_PROXY_SEMANTIC         parent reports the child's symptom           Yes      No
NON_RES                    other complaint, denies respiratory symptoms No       No
========================== =========================================== ======== =========

Exhibited sounds are real recorded coughs and sneezes (Debian ``scratch`` media), throat
clearing made from them, and hoarse or breathy voice made by signal processing.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from tqdm.auto import tqdm

from harp_lib.core import audio
from harp_lib.core.labels import cough_label
from harp_lib.core.schema import Query, Recording, Segment
from harp_lib.corpora.synth.core import DomainBuild, SynthCache, rng_for, scratch_dir
from harp_lib.corpora.synth.text import (DOCTOR_EXTRA_QUESTIONS, DOCTOR_FOLLOWUPS, DOCTOR_OPENINGS, DOCTOR_PLANS,
                   DOCTOR_RES_CHECK, NEGATIONS, OTHER_COMPLAINTS, PATIENT_CLOSINGS, PATIENT_DETAILS,
                   PROXY_DETAILS, PROXY_OTHER, PROXY_REPORTS, SELF_REPORTS)
from harp_lib.corpora.synth.voices import VOICES, normalize_rms, render

__all__ = ["GROUPS", "REPORTED", "EXHIBITED", "build", "hoarse", "breathy"]

SR = 16000
GROUPS = ("RES_SELF_ACOUSTIC", "RES_SELF_SEMANTIC", "RES_ACOUSTIC_ONLY",
          "RES_PROXY_SPEAKER_COUGH", "RES_PROXY_SEMANTIC", "NON_RES")
REPORTED = {"RES_SELF_ACOUSTIC", "RES_SELF_SEMANTIC", "RES_PROXY_SPEAKER_COUGH", "RES_PROXY_SEMANTIC"}
EXHIBITED = {"RES_SELF_ACOUSTIC", "RES_ACOUSTIC_ONLY", "RES_PROXY_SPEAKER_COUGH"}
Q_REPORTED = "Did the patient report any respiratory symptoms during the consultation?"
Q_EXHIBITED = "Were respiratory symptoms exhibited during the consultation?"
#: the question after "In the consultation from m:ss to m:ss, " (session recordings)
_SESSION_Q = {"reported": "did the patient report any respiratory symptoms?",
              "exhibited": "were respiratory symptoms exhibited?"}


def _lowpass(w: np.ndarray, hz: float, order: int = 4) -> np.ndarray:
    from scipy.signal import butter, sosfilt  # heavy: scipy.signal (~0.8 s), and `harp --help` imports this module
    return sosfilt(butter(order, hz, "lowpass", fs=SR, output="sos"), w).astype(np.float32)


def _band(w: np.ndarray, lo: float, hi: float) -> np.ndarray:
    from scipy.signal import butter, sosfilt  # heavy: scipy.signal (~0.8 s), and `harp --help` imports this module
    return sosfilt(butter(2, [lo, hi], "bandpass", fs=SR, output="sos"), w).astype(np.float32)


def _envelope(w: np.ndarray, win: float = 0.02) -> np.ndarray:
    n = max(1, int(win * SR))
    return np.convolve(np.abs(w), np.ones(n) / n, mode="same").astype(np.float32)


def hoarse(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rough, hoarse voice: irregular amplitude (roughness), band noise following the
    speech envelope, and a duller spectrum; same loudness as the input."""
    t = np.arange(len(w)) / SR
    am = 1.0 + 0.55 * np.sin(2 * np.pi * 33.0 * t + 0.4 * np.cumsum(rng.standard_normal(len(w))) / SR * 40)
    noise = _band(rng.standard_normal(len(w)).astype(np.float32), 900.0, 4500.0)
    noise /= max(1e-9, float(np.sqrt(np.mean(noise ** 2))))
    y = _lowpass(w * am, 3200.0) + 1.8 * _envelope(w) * noise
    return normalize_rms(y, 20 * np.log10(max(1e-9, float(np.sqrt(np.mean(w ** 2))))))


def breathy(w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Breathy voice: weaker voicing plus high-passed breath noise following the envelope."""
    noise = _band(rng.standard_normal(len(w)).astype(np.float32), 2000.0, 7000.0)
    noise /= max(1e-9, float(np.sqrt(np.mean(noise ** 2))))
    y = 0.6 * _lowpass(w, 4000.0) + 2.2 * _envelope(w) * noise
    return normalize_rms(y, 20 * np.log10(max(1e-9, float(np.sqrt(np.mean(w ** 2))))))


def _sound(name: str) -> np.ndarray:
    w = audio.load(scratch_dir() / name, sr=SR)
    return normalize_rms(w, -18.0)


def _event_audio(kind: str, gender: str, count: int, rng: np.random.Generator) -> np.ndarray:
    """A burst of ``count`` coughs / sneezes, or a throat clear, from the real recordings."""
    g = "female" if gender == "female" else "male"
    if kind == "cough":
        clip = _sound(f"Cough-{g}.wav")
    elif kind == "sneeze":
        clip = _sound(f"Sneeze-{g}.wav")
    else:  # throat_clear: the cough's onset, muffled, twice ("ahem")
        c = _sound(f"Cough-{g}.wav")
        c = _lowpass(c[: int(0.28 * SR)], 1400.0) * np.hanning(int(0.28 * SR)).astype(np.float32)
        clip = normalize_rms(c, -22.0)
        count = 2
    parts = []
    for i in range(count):
        gain = float(10 ** (rng.uniform(-3.0, 1.0) / 20))
        parts.append(clip * gain)
        if i + 1 < count:
            parts.append(np.zeros(int(rng.uniform(0.15, 0.4) * SR), np.float32))
    return np.concatenate(parts).astype(np.float32)


def _plan(rid: str, group: str, seed: int, sizes: dict):
    """The turns of one consultation: (role, kind, text, symptoms, negated) and event inserts."""
    rng = rng_for(seed, "clinical", rid, "plan")
    proxy = group.startswith("RES_PROXY")
    pick = lambda bank: bank[int(rng.integers(len(bank)))]  # noqa: E731
    turns = [("doctor", pick(DOCTOR_OPENINGS), (), ())]
    pr = "parent" if proxy else "patient"
    if group in REPORTED:
        sym, sent = pick(PROXY_REPORTS if proxy else SELF_REPORTS)
        turns.append((pr, sent, tuple(sym), ()))
    else:
        turns.append((pr, pick(OTHER_COMPLAINTS), (), ()))
    turns.append(("doctor", pick(DOCTOR_FOLLOWUPS), (), ()))
    turns.append((pr, pick(PROXY_DETAILS if proxy else PATIENT_DETAILS), (), ()))
    extra = [DOCTOR_EXTRA_QUESTIONS[int(i)] for i in rng.permutation(len(DOCTOR_EXTRA_QUESTIONS))]
    for q, a in extra[: int(sizes.get("consult_extra_qa", 0))]:
        turns += [("doctor", q, (), ()), (pr, a, (), ())]
    if group == "NON_RES":
        turns.append(("doctor", pick(DOCTOR_RES_CHECK), (), ()))
        turns.append((pr, pick(NEGATIONS), (), ("cough",)))
    if proxy and group not in REPORTED:
        turns.append((pr, pick(PROXY_OTHER), (), ()))
    turns.append(("doctor", pick(DOCTOR_PLANS), (), ()))
    if sizes.get("consult_extra_qa", 0):
        turns.append((pr, pick(PATIENT_CLOSINGS), (), ()))
    # exhibited sounds: at least one cough or sneeze burst, maybe throat clearing or a rough voice
    events: dict[int, list] = {}
    voice_quality = None
    if group in EXHIBITED:
        slots = [i for i, t in enumerate(turns) if t[0] != "doctor"]
        main = "sneeze" if rng.random() < 0.2 else "cough"
        for i in sorted(int(x) for x in rng.choice(slots, size=min(2, len(slots)), replace=False)):
            events.setdefault(i, []).append((main, int(rng.integers(1, 4))))
            main = "cough"
        extra_kind = str(rng.choice(["none", "throat_clear", "hoarse", "breathy"]))
        if extra_kind == "throat_clear":
            events.setdefault(int(rng.choice(slots)), []).insert(0, ("throat_clear", 1))
        elif extra_kind in ("hoarse", "breathy"):
            voice_quality = extra_kind
    return turns, events, voice_quality


def _turn_custom(role: str, sym: tuple, neg: tuple, exhibited) -> dict:
    """The ``custom`` of one spoken turn: role, reported / negated symptoms, voice-quality event."""
    custom = {"role": role}
    if sym:
        custom["reported_symptom"] = list(sym)
        if role == "parent":
            custom["reported_for"] = "child"
    if neg:
        custom["negated_symptom"] = list(neg)
    if exhibited:
        custom["exhibited_event"] = exhibited
    return custom


def _lay_turns(rid: str, seed: int, plan: tuple, voices: tuple, cache: SynthCache,
               trng: np.random.Generator) -> tuple:
    """Render the turns and their sound events back to back: ``(pieces, segments, end time)``."""
    turns, events, vq = plan
    doc, pat = voices
    pieces, segs = [], []
    t = 0.8
    gender = VOICES[pat].gender

    def add(wave, speaker, text, labels, custom):
        nonlocal t
        start = round(t, 3)
        pieces.append((int(round(start * SR)), wave))
        end = round(start + len(wave) / SR, 3)
        segs.append(Segment(id=f"{rid}_{len(segs) + 1:04d}", recording_id=rid, start=start, end=end,
                            speaker=speaker, text=text, labels=labels, source="gt", custom=custom))
        t = end + float(trng.uniform(0.35, 0.75))

    for i, (role, text, sym, neg) in enumerate(turns):
        spk = doc if role == "doctor" else pat
        w = render(VOICES[spk], text, "Neutral", 0.0, cache)
        ev_here = []
        if role != "doctor" and vq is not None:
            w = (hoarse if vq == "hoarse" else breathy)(w, rng_for(seed, "clinical", rid, "vq", i))
            ev_here = [vq]
        custom = _turn_custom(role, sym, neg, vq if ev_here else None)
        add(w, spk, text, {"primary": cough_label(0), "cough_count": 0, "events": ev_here,
                           "symptoms": list(sym)}, custom)
        for kind, count in events.get(i, []):
            ew = _event_audio(kind, gender, count, rng_for(seed, "clinical", rid, "event", i, kind))
            nc = count if kind == "cough" else 0
            add(ew, pat, "", {"primary": cough_label(nc), "cough_count": nc, "events": [kind],
                              "symptoms": []}, {"role": role, "exhibited_event": kind})
    return pieces, segs, t


def _mix(pieces: list, t: float, trng: np.random.Generator, noise_floor_db: float) -> np.ndarray:
    """Sum the pieces into one wave lasting until 0.5 s after ``t``, plus the room-noise floor."""
    total = int(round((t + 0.5) * SR))
    wave = np.zeros(total, np.float32)
    for s, w in pieces:
        wave[s:s + len(w)] += w
    wave += (trng.standard_normal(total) * 10 ** (noise_floor_db / 20)).astype(np.float32)
    return wave


def _annotation(group: str, segs: list) -> str:
    """The consultation's note: proxy or not, what was reported and what was exhibited."""
    n_cough = sum(s.labels["cough_count"] for s in segs)
    kinds = sorted({e for s in segs for e in s.labels["events"]})
    who = "the speaker (parent)" if group.startswith("RES_PROXY") else "the patient"
    note = []
    if group.startswith("RES_PROXY"):
        note.append("Proxy: the speaker's child is the patient")
    if group in REPORTED:
        syms = sorted({x for s in segs for x in s.labels["symptoms"]})
        note.append(f"{who} reported {', '.join(syms)}")
    else:
        note.append("no respiratory symptom reported")
    if group in EXHIBITED:
        note.append(f"{who} exhibited {', '.join(kinds)}" + (f" ({n_cough} coughs)" if n_cough else ""))
    else:
        note.append("no respiratory sound exhibited")
    return "; ".join(note)


def _consultation(k: int, group: str, seed: int, params: dict, cache: SynthCache) -> dict:
    """One consultation with local times: wave, GT segments (ids ``consult_NNN_MMMM``) and facts."""
    sizes = params["sizes"]
    rid = f"consult_{k + 1:03d}"
    vrng = rng_for(seed, "clinical", rid, "voices")
    doc, pat = (str(v) for v in vrng.choice(sorted(VOICES), size=2, replace=False))
    turns, events, vq = _plan(rid, group, seed, sizes)
    trng = rng_for(seed, "clinical", rid, "timing")
    pieces, segs, t = _lay_turns(rid, seed, (turns, events, vq), (doc, pat), cache, trng)
    wave = _mix(pieces, t, trng, params["noise_floor_db"])
    reported = group in REPORTED
    exhibited = group in EXHIBITED
    return {"id": rid, "wave": wave, "segs": segs, "group": group, "doctor": doc, "patient": pat,
            "voice_quality": vq, "annotation": _annotation(group, segs), "reported": reported,
            "exhibited": exhibited}


def _clock(t: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) of whole seconds."""
    t = int(t)
    h, m, s = t // 3600, t % 3600 // 60, t % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _consultations(seed: int, params: dict, cache: SynthCache, progress: bool) -> list[dict]:
    """Deal the groups evenly over the consultations (shuffled by seed) and build each one."""
    sizes = params["sizes"]
    n = int(sizes["consultations"])
    grng = rng_for(seed, "clinical", "groups")
    groups = [GROUPS[i % len(GROUPS)] for i in range(n)]
    groups = [groups[int(i)] for i in grng.permutation(n)]
    return [_consultation(k, groups[k], seed, params, cache)
            for k in tqdm(range(n), desc="clinical consultations", disable=not progress)]


def _place_session(out: DomainBuild, consults: list[dict], seed: int, params: dict) -> list[tuple]:
    """Join the consultations into ``clinic_session`` with room-noise gaps; returns their placements."""
    sizes = params["sizes"]
    placed = []
    sid = "clinic_session"
    gap_lo, gap_hi = (float(x) for x in sizes["consult_gap_sec"])
    srng = rng_for(seed, "clinical", sid, "gaps")
    offset, parts, n_seg = 0.0, [], 0
    for c in consults:
        segs = []
        for s in c["segs"]:
            n_seg += 1
            segs.append(replace(s, id=f"{sid}_{n_seg:04d}", recording_id=sid, start=round(s.start + offset, 3),
                                end=round(s.end + offset, 3), custom={**s.custom, "consultation": c["id"]}))
        placed.append((c, sid, offset, segs))
        parts.append(c["wave"])
        offset = round(offset + len(c["wave"]) / SR, 3)
        gap = int(round(float(srng.uniform(gap_lo, gap_hi)) * SR))
        parts.append((srng.standard_normal(gap) * 10 ** (params["noise_floor_db"] / 20)).astype(np.float32))
        offset = round(offset + gap / SR, 3)
    wave = np.concatenate(parts[:-1]).astype(np.float32)
    rel = f"recordings/{sid}.wav"
    out.audio[rel] = wave
    out.recordings.append(Recording(
        id=sid, domain="clinical", audio_path=rel, duration=round(len(wave) / SR, 3),
        custom={"consultations": [{"id": c["id"], "start": o, "end": round(o + len(c["wave"]) / SR, 3),
                                   "group": c["group"], "doctor": c["doctor"], "patient": c["patient"],
                                   "annotation": c["annotation"], "voice_quality": c["voice_quality"]}
                                  for c, _, o, _ in placed]}))
    return placed


def _place_each(out: DomainBuild, consults: list[dict]) -> list[tuple]:
    """Write each consultation as its own recording ``consult_NNN``; returns their placements."""
    placed = []
    for c in consults:
        placed.append((c, c["id"], 0.0, c["segs"]))
        rel = f"recordings/{c['id']}.wav"
        out.audio[rel] = c["wave"]
        out.recordings.append(Recording(
            id=c["id"], domain="clinical", audio_path=rel, duration=round(len(c["wave"]) / SR, 3),
            custom={"group": c["group"], "doctor": c["doctor"], "patient": c["patient"],
                    "annotation": c["annotation"], "voice_quality": c["voice_quality"]}))
    return placed


def _add_queries(out: DomainBuild, placed: list[tuple], session: bool) -> None:
    """Add each placed consultation's segments and its reported / exhibited yes-no queries."""
    qn = {"reported": 0, "exhibited": 0}
    for c, rec_id, offset, segs in placed:
        out.segments += segs
        rep_ids = tuple(s.id for s in segs if s.labels["symptoms"])
        exh_ids = tuple(s.id for s in segs if s.labels["events"])
        t0, t1 = offset, round(offset + len(c["wave"]) / SR, 3)
        # the named window: whole seconds around the consultation (inside the gaps)
        w0, w1 = float(int(t0)), float(int(t1) + 1)
        for qt, text, yes, ids in (("reported", Q_REPORTED, c["reported"], rep_ids),
                                   ("exhibited", Q_EXHIBITED, c["exhibited"], exh_ids)):
            if yes and not ids:
                raise RuntimeError(f"{c['id']}: {qt} is Yes but no evidence segment was written")
            qn[qt] += 1
            gt = {"answer": "Yes" if yes else "No"}
            if session:
                text = f"In the consultation from {_clock(w0)} to {_clock(w1)}, {_SESSION_Q[qt]}"
                gt.update(t0=w0, t1=w1)
            out.queries.append(Query(
                query_id=f"{qt}-{qn[qt]:04d}", domain="clinical", recording_id=rec_id, query_type=qt, text=text,
                ground_truth=gt,
                judge_info={"type": "yes_no", "group": c["group"], "annotation": c["annotation"]},
                gt_segment_ids=ids if yes else (), time_ref=(segs_by_id_start(segs, ids) if yes else None),
                custom={"group": c["group"], "consultation": c["id"]}))


def build(seed: int, params: dict, cache: SynthCache, *, progress: bool = True) -> DomainBuild:
    """Build every consultation: audio, GT segments (turns and sound events) and two queries each.

    With ``sizes.consult_session`` true (the mini profile) the consultations are one long
    recording, ``clinic_session``, a clinic's session: consultations follow each other after
    ``consult_gap_sec`` of room noise, and every question names its consultation by its time
    window ("In the consultation from 12:04 to 13:35, ..."), so the answerer has to find that
    window.  Otherwise each consultation is its own recording ``consult_NNN``."""
    sizes = params["sizes"]
    out = DomainBuild("clinical")
    session = bool(sizes.get("consult_session", False))
    consults = _consultations(seed, params, cache, progress)
    # placements: (consultation, recording id, offset s, [segments in recording time])
    placed = _place_session(out, consults, seed, params) if session else _place_each(out, consults)
    _add_queries(out, placed, session)
    return out


def segs_by_id_start(segs, ids) -> float:
    """Start of the first evidence segment."""
    return min(s.start for s in segs if s.id in set(ids))
