"""What each setup's answerer sees: metadata, what is heard in the clips, or both (fused).

The paper's setups (HARP_REFERENCE §3.11, ``harp_lib.config.SETUPS``) differ in the evidence
shown to the answerer:

==========  ==================  ==========================================================
setup       evidence            the answerer sees
==========  ==================  ==========================================================
A1 A2 A3    metadata            speaker, transcript and index labels of each segment
A4 A6       audio               times + what the offline labelers *hear* in the attached clip
                                (no speaker / transcript / index labels; ASR text only for
                                reported-symptom questions)
A5 A7       multimodal          the metadata **and** what is heard, both, marked as such
==========  ==================  ==========================================================

A6/A7 differ from A4/A5 only in their windows (the oracle planner's ground-truth windows).

"Heard" labels are the domain's offline labelers (params ``extract.backends.labelers``) run
on the part of each set's attached clip that holds the item, all windows of a query together
(per-recording normalising labelers compare them); they get no transcript, so they are what
the audio alone says.

**Fusion** (multimodal setups; :func:`fuse_labels`, documented in docs/agent.md):

* continuous values (valence / arousal / dominance, the song's overall aesthetic score) — the
  mean of the metadata and the heard value: both estimate the same scale with independent
  noise (the index labels are normalised over the whole recording, the heard ones over the
  query's windows), so neither is preferred and averaging halves the variance;
* the emotion category — the mean of the two score distributions (each normalised to sum 1);
  where they tie (the usual case when each names one class) **the heard label wins**: the
  category is a property of how the clip sounds, and the heard label is computed on the very
  audio attached as evidence;
* coughs / respiratory events — either source suffices (the larger cough count, the union of
  events): a missed event is the failure both share, a false one is rare;
* speaker, transcript and reported symptoms — metadata only (the clip's ASR is the engine that
  wrote the transcript, so it adds nothing).

Every disagreement between the heard label and the metadata is listed in the rule answerer's
rationale, so A5 differs from A3 wherever they disagree.

>>> fuse_labels("emotion", {"primary": "Happy", "scores": {"Happy": 1.0}, "arousal": 0.8},
...             {"primary": "Sad", "scores": {"Sad": 0.9}, "arousal": 0.4})["primary"]
'Sad'
>>> fuse_labels("song", {"overall": 4.0, "primary": "High"}, {"overall": 3.0})["overall"]
3.5
>>> fuse_labels("clinical", {"primary": "no cough", "cough_count": 0, "symptoms": ["fever"]},
...             {"primary": "2 cough", "cough_count": 2, "events": ["cough"]})["cough_count"]
2
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from harp_lib.core.labels import cough_label, emotion_of, tier_of
from harp_lib.core.schema import Evidence, EvidenceItem, EvidenceSet
from harp_lib.core.timespan import Span
from harp_lib.agent.evidence import NO_EVIDENCE, fmt_range, render_item, render_labels
from harp_lib.tasks import read_question

__all__ = ["heard_labels", "fuse_labels", "disagreements", "visible_sets", "render_view", "HEARD_NOTE"]

HEARD_NOTE = "labels below are what the offline labelers heard in the clips"
_AVD = ("valence", "arousal", "dominance")
_TIER_VALUE = {"High": 4.0, "Mid": 3.0, "Low": 2.0}


def _num(v: Any) -> Optional[float]:
    if isinstance(v, Mapping):
        v = v.get("mean")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _overall(lab: Mapping) -> Optional[float]:
    v = _num(lab.get("overall"))
    if v is not None:
        return v
    sc = lab.get("scores")
    if isinstance(sc, Mapping) and sc:
        vals = [x for x in (_num(v) for v in sc.values()) if x is not None]
        if vals:
            return sum(vals) / len(vals)
    return _TIER_VALUE.get(lab.get("primary"))


def _dist(lab: Mapping) -> dict[str, float]:
    """Emotion score distribution normalised to sum 1 (the primary alone when no scores)."""
    sc = lab.get("scores")
    out: dict[str, float] = {}
    if isinstance(sc, Mapping):
        for k, v in sc.items():
            e, x = emotion_of(str(k)), _num(v)
            if e and x is not None and x > 0:
                out[e] = out.get(e, 0.0) + x
    prim = emotion_of(str(lab.get("primary"))) if lab.get("primary") else None
    if not out and prim:
        out = {prim: 1.0}
    tot = sum(out.values())
    return {k: v / tot for k, v in out.items()} if tot > 0 else {}


def _mean_known(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """The mean of the values known (one alone when the other is None), to 4 places."""
    if a is None and b is None:
        return None
    return round(((a or 0.0) + (b or 0.0)) / (2 if a is not None and b is not None else 1), 4)


def _fused_primary(fused: dict[str, float], dm: dict[str, float], dh: dict[str, float]) -> str:
    """The fused distribution's top category; on a tie the heard label wins, then the metadata's."""
    keys = sorted(fused)
    best = max(fused.values())
    tops = [k for k in keys if fused[k] >= best - 1e-9]
    hp = max(dh, key=dh.get) if dh else None
    if hp in tops:
        return hp
    mp = max(dm, key=dm.get) if dm else None
    return mp if mp in tops else tops[0]


def _fuse_emotion(meta: Mapping, heard: Mapping, meta_weight: float) -> dict:
    """The category: the mean of the two score distributions; valence / arousal / dominance: the means."""
    out: dict = {}
    dm, dh = _dist(meta), _dist(heard)
    if dm or dh:
        keys = sorted(set(dm) | set(dh))
        fused = {k: round((dm.get(k, 0.0) + dh.get(k, 0.0)) / (2 if dm and dh else 1), 4) for k in keys}
        out["primary"] = _fused_primary(fused, dm, dh)
        out["scores"] = fused
    for d in _AVD:
        v = _mean_known(_num(meta.get(d)), _num(heard.get(d)))
        if v is not None:
            out[d] = v
    return out


def _fuse_song(meta: Mapping, heard: Mapping, meta_weight: float) -> dict:
    """The overall score: the metadata's share ``meta_weight`` of it (one alone when the other is
    unknown), and its tier."""
    a, b = _overall(meta), _overall(heard)
    if a is None and b is None:
        return {}
    w = min(1.0, max(0.0, float(meta_weight)))
    v = (w * a + (1 - w) * b) if a is not None and b is not None else (a if a is not None else b)
    return {"overall": round(v, 4), "primary": tier_of(v)}


def _fuse_clinical(meta: Mapping, heard: Mapping, meta_weight: float) -> dict:
    """Either source suffices: the larger cough count, the union of events."""
    n = max(int(meta.get("cough_count") or 0), int(heard.get("cough_count") or 0))
    ev = sorted(set(meta.get("events") or []) | set(heard.get("events") or []))
    out = {"cough_count": n, "primary": cough_label(n)}
    if ev:
        out["events"] = ev
    return out


#: Each domain's fusion of the label keys it knows (other keys: the metadata's).
_FUSERS = {"emotion": _fuse_emotion, "song": _fuse_song, "clinical": _fuse_clinical}


def fuse_labels(domain: str, meta: Mapping, heard: Mapping, *, meta_weight: float = 0.5) -> dict:
    """One label dict from the index labels (``meta``) and the heard ones (module docstring).

    ``meta_weight`` (songs): the metadata's share of the fused overall score (0.5 = the mean);
    :func:`song_meta_weight` lowers it when the index song measured more audio than the clip.

    >>> fuse_labels("song", {"overall": 4.0}, {"overall": 3.0}, meta_weight=0.25)["overall"]
    3.25
    """
    meta, heard = dict(meta or {}), dict(heard or {})
    if not heard:
        return meta
    if not meta:
        return heard
    out = dict(meta)
    fuse = _FUSERS.get(domain)
    if fuse is not None:
        out.update(fuse(meta, heard, meta_weight))
    return out


def song_meta_weight(song: Optional[Span], clip: Optional[Span]) -> float:
    """The index label's share in the fused song score: half, times the fraction of the index
    song (the extracted ``SONG_NN`` turn the label was measured on) that lies in the clip.

    The index labels a whole *extracted* song; when the segmenter missed a boundary that turn
    holds two or three songs, and its label is their mix, while the heard label is measured on
    the clip alone.  Unknown extents keep the plain mean (0.5).

    >>> song_meta_weight(Span(0, 300), Span(0, 100))
    0.16666666666666666
    >>> song_meta_weight(Span(10, 110), Span(8, 112)), song_meta_weight(None, Span(0, 1))
    (0.5, 0.5)
    """
    if song is None or clip is None or song.end <= song.start:
        return 0.5
    inside = max(0.0, min(song.end, clip.end) - max(song.start, clip.start))
    return 0.5 * inside / (song.end - song.start)


def disagreements(domain: str, meta: Mapping, heard: Mapping, *, tol: float = 0.1) -> list[str]:
    """Where the heard labels disagree with the metadata, as ``key heard X vs metadata Y`` strings."""
    if not meta or not heard:
        return []
    out = []
    if domain == "emotion":
        pm = emotion_of(str(meta.get("primary"))) if meta.get("primary") else None
        ph = emotion_of(str(heard.get("primary"))) if heard.get("primary") else None
        if pm and ph and pm != ph:
            out.append(f"emotion heard {ph} vs metadata {pm}")
        for d in _AVD:
            a, b = _num(meta.get(d)), _num(heard.get(d))
            if a is not None and b is not None and abs(a - b) >= tol:
                out.append(f"{d} heard {b:.2f} vs metadata {a:.2f}")
    elif domain == "song":
        a, b = _overall(meta), _overall(heard)
        if a is not None and b is not None and abs(a - b) >= tol:
            out.append(f"overall heard {b:.2f} vs metadata {a:.2f}")
    elif domain == "clinical":
        a, b = int(meta.get("cough_count") or 0), int(heard.get("cough_count") or 0)
        if a != b:
            out.append(f"coughs heard {b} vs metadata {a}")
    return out


def clip_spans(evidence: Evidence) -> tuple[list[Span], list[tuple[int, int]]]:
    """Each item's part of its set's attached clip, with its ``(set position, item position)``;
    items outside their clip are left out."""
    spans, where = [], []
    for si, s in enumerate(evidence.sets):
        for ii, it in enumerate(s.items):
            lo = max(it.start, s.clip_start if s.clip_start is not None else it.start)
            hi = min(it.end, s.clip_end if s.clip_end is not None else it.end)
            if hi > lo:
                spans.append(Span(lo, hi))
                where.append((si, ii))
    return spans, where


def heard_labels(ctx, evidence: Evidence, *, want_text: bool = False
                 ) -> tuple[dict[tuple[int, int], dict], dict[tuple[int, int], str], list[str]]:
    """Labels (and, with ``want_text``, ASR text) the offline labelers hear in each item's part of
    its set's clip; keyed by ``(set position, item position)``; plus notes on what went wrong.

    The one place clips are listened to: the rule answerer's view (:func:`visible_sets`,
    :func:`render_view`) and the text LLM answerer's evidence (:mod:`.heard`) both call it, and
    the result is kept on the query's context (``ctx.heard``), so each clip is labelled once per
    query whichever of them asks (and however often).
    """
    spans, where = clip_spans(evidence)
    key = (tuple(where), tuple(s.to_tuple() for s in spans), tuple(evidence.sets[si].index for si, _ in where),
           bool(want_text))
    memo = getattr(ctx, "heard", None)
    if isinstance(memo, dict) and key in memo:
        labels, texts, notes = memo[key]
        return dict(labels), dict(texts), list(notes)
    notes: list[str] = []
    hearing = ctx.hearing if ctx.params.hear_with_labelers else None
    path = ctx.audio_path
    labels: dict[tuple[int, int], dict] = {}
    texts: dict[tuple[int, int], str] = {}
    if hearing is not None and path is not None and spans:
        try:
            asr = [hearing.transcribe(path, sp) for sp in spans] if want_text else None
            # songs: each set's clip is one song; emotion/clinical: windows pooled (speakers unknown)
            groups = [f"SET_{evidence.sets[si].index}" for si, _ in where] if ctx.domain == "song" else None
            for w, lab, t in zip(where, hearing.label_spans(path, spans, asr, groups), asr or [""] * len(spans)):
                labels[w], texts[w] = lab, t
        except Exception as e:  # noqa: BLE001 - an unreadable clip is said, not fatal
            notes.append(f"could not listen to the clips ({type(e).__name__}: {e})")
    if hearing is None or not hearing.available:
        notes.append("no offline labeler available: heard labels unknown")
    if isinstance(memo, dict):
        memo[key] = (dict(labels), dict(texts), list(notes))
    return labels, texts, notes


def _index_songs(ctx) -> dict:
    try:
        return dict(ctx.songs)
    except Exception:  # noqa: BLE001 - no index: the plain mean
        return {}


def _song_of(songs: Mapping, speaker: Optional[str]) -> Optional[Span]:
    """The index song span of a ``SONG_NN`` speaker tag (None when unknown)."""
    if not speaker or not str(speaker).upper().startswith("SONG_"):
        return None
    try:
        return songs.get(int(str(speaker).split("_")[-1]))
    except ValueError:
        return None


def visible_sets(ctx, evidence: Evidence) -> tuple[list[tuple[EvidenceSet, list[EvidenceItem]]], list[str]]:
    """Evidence sets with the items as this setup's (rule) answerer may use them; plus notes.

    Metadata setups: items unchanged.  Audio-only: speaker/text/labels removed, labels = heard
    (text = ASR for reported-symptom questions).  Multimodal: metadata with labels fused with
    the heard ones (:func:`fuse_labels`); each disagreement is noted.
    """
    setup = ctx.setup
    if not setup.attach_audio:
        return [(s, list(s.items)) for s in evidence.sets], []
    audio_only = not setup.show_metadata
    want_text = audio_only and read_question(ctx.query.text, ctx.domain, tuple(ctx.query.references)).task == "reported"
    heard, heard_text, notes = heard_labels(ctx, evidence, want_text=want_text)
    songs = _index_songs(ctx) if ctx.domain == "song" and not audio_only else {}
    out, diffs = [], []
    for si, s in enumerate(evidence.sets):
        items = []
        clip = Span(s.clip_start, s.clip_end) if s.clip_start is not None and s.clip_end is not None else None
        for ii, it in enumerate(s.items):
            h = heard.get((si, ii), {})
            if audio_only:
                items.append(EvidenceItem(it.segment_id, it.start, it.end, None, heard_text.get((si, ii), ""),
                                          h, dict(it.sources)))
            else:
                items.append(EvidenceItem(it.segment_id, it.start, it.end, it.speaker, it.text,
                                          fuse_labels(ctx.domain, it.labels, h, meta_weight=song_meta_weight(
                                              _song_of(songs, it.speaker), clip)), dict(it.sources)))
                diffs += [f"{fmt_range(it.start, it.end)} {d}" for d in disagreements(ctx.domain, it.labels, h)]
        out.append((s, items))
    if audio_only:
        if heard:
            notes.append(HEARD_NOTE)
        elif not any("no offline labeler" in n for n in notes):
            notes.append("nothing could be heard in the clips")
    elif heard:
        notes.append("labels fuse the metadata with what the offline labelers heard in the clips"
                     + ("; heard vs metadata: " + "; ".join(diffs) if diffs else "; they agree"))
    return out, notes


def render_view(ctx, evidence: Evidence) -> str:
    """The evidence text this setup's answerer receives, every source marked.

    Metadata lines: ``- speaker:``, ``- text:``, ``- labels:`` (the index).  Heard lines:
    ``- heard: ...`` (the offline labelers on the attached clip) and ``- heard text:`` (ASR,
    reported-symptom questions in audio-only setups).  Audio-only setups get times, tool
    scores and heard lines only; multimodal setups get both.
    """
    if not evidence.sets:
        return NO_EVIDENCE
    setup = ctx.setup
    heard: dict = {}
    heard_text: dict = {}
    notes: list[str] = []
    if setup.attach_audio:
        want_text = (not setup.show_metadata
                     and read_question(ctx.query.text, ctx.domain, tuple(ctx.query.references)).task == "reported")
        heard, heard_text, notes = heard_labels(ctx, evidence, want_text=want_text)
    blocks = []
    for si, s in enumerate(evidence.sets):
        win = "" if s.error and not s.items and s.end == 0 else f"; window {s.start:.1f}s–" + (
            "end" if math.isinf(s.end) else f"{s.end:.1f}s")
        clip = (f"; clip {s.clip_start:.1f}s–{s.clip_end:.1f}s" if setup.attach_audio and s.clip_start is not None
                and s.clip_end is not None else "")
        lines = [f"### Set {s.index} ({s.localize}{win}{clip})"]
        for ii, it in enumerate(s.items):
            lines.extend(render_item(it, strip_domain=not setup.show_metadata))
            if setup.attach_audio:
                h = heard.get((si, ii))
                lines.append(f"- heard: {render_labels(h) if h else '(nothing heard)'}")
                if heard_text.get((si, ii)):
                    lines.append(f'- heard text: "{heard_text[(si, ii)]}"')
        if not s.items:
            lines.append("(no segments retrieved)")
        if s.error:
            lines.append(f"(note: {s.error})")
        blocks.append("\n".join(lines))
    if notes:
        blocks.append("(" + "; ".join(notes) + ")")
    return "\n\n".join(blocks)
