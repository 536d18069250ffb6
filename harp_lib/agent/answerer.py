"""Answerers: the LLM answerer (paper) and a deterministic rule answerer.

Both return ``(answer, rationale, meta)``.  Answers start with the decision in the shared
vocabulary (docs/architecture.md "Answers and rationales"); rationales cite evidence as
``[12.4s–17.1s]`` ranges with speakers and labels.

The rule answerer reads only what the setup shows: metadata setups (A1-A3, A5, A7) read the
evidence labels/text; audio-only setups (A4, A6, ``strip_domain``) see no labels, so it runs
the offline labelers on the attached clip audio of each retrieved segment ("what it could
hear") — and, for reported clinical symptoms, the offline ASR.

>>> split_rationale("Happy. Rationale: [1.0s–2.0s] primary=Happy")
('Happy.', '[1.0s–2.0s] primary=Happy')
>>> split_rationale("Rationale: only this")
('only this', '')
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any, Optional, Sequence

from ..labels import AVD_DIMENSIONS, EMOTIONS, TIERS, cough_count, emotion_of
from ..schema import Evidence, EvidenceItem, EvidenceSet, Plan
from ..timespan import Span, format_time
from .evidence import evidence_clips, fmt_range, reference_clips, render_evidence, render_labels
from .planner import RESPIRATORY_TERMS, load_prompt

__all__ = ["split_rationale", "RuleAnswerer", "LLMAnswerer", "answer_prompt", "visible_sets"]

_TIER_VALUE = {"High": 4.0, "Mid": 3.0, "Low": 2.0}
_NEGATION = re.compile(r"\b(no|not|never|without|denies|deny|don't|didn't|haven't|hasn't)\b(\W+\w+){0,2}\W+$")


def split_rationale(text: str) -> tuple[str, str]:
    """Split model output once on 'Rationale:' (case-insensitive), as the paper does."""
    m = re.search(r"rationale\s*:", text or "", re.I)
    if not m:
        return (text or "").strip(), ""
    head, tail = text[:m.start()].strip(), text[m.end():].strip()
    if not head:
        return tail, ""
    return head, tail


# ---------------------------------------------------------------------------------------
# What the answerer can see
# ---------------------------------------------------------------------------------------
def visible_sets(ctx, evidence: Evidence) -> tuple[list[tuple[EvidenceSet, list[EvidenceItem]]], list[str]]:
    """Evidence sets with the items as this setup shows them; plus notes on what was heard.

    Metadata setups: items unchanged.  Audio-only setups: speaker/text/labels removed and
    labels replaced by what the offline labelers hear in the item's part of the set clip.
    """
    notes: list[str] = []
    if ctx.setup.show_metadata:
        return [(s, list(s.items)) for s in evidence.sets], notes
    hearing = ctx.hearing if ctx.p("hear_with_labelers") else None
    path = ctx.audio_path
    want_text = ctx.query.query_type == "reported"
    spans, where = [], []
    for si, s in enumerate(evidence.sets):
        for ii, it in enumerate(s.items):
            lo = max(it.start, s.clip_start if s.clip_start is not None else it.start)
            hi = min(it.end, s.clip_end if s.clip_end is not None else it.end)
            if hi > lo:
                spans.append(Span(lo, hi))
                where.append((si, ii))
    heard_labels: dict[tuple[int, int], dict] = {}
    heard_text: dict[tuple[int, int], str] = {}
    if hearing is not None and path is not None and spans:
        try:
            texts = [hearing.transcribe(path, sp) for sp in spans] if want_text else None
            # songs: each set's clip is one song; emotion/clinical: windows pooled (speakers unknown)
            groups = [f"SET_{evidence.sets[si].index}" for si, _ in where] if ctx.domain == "song" else None
            for w, lab, t in zip(where, hearing.label_spans(path, spans, texts, groups), texts or [""] * len(spans)):
                heard_labels[w], heard_text[w] = lab, t
        except Exception as e:  # noqa: BLE001
            notes.append(f"could not listen to the clips ({type(e).__name__}: {e})")
    out = []
    for si, s in enumerate(evidence.sets):
        heard = [EvidenceItem(it.segment_id, it.start, it.end, None, heard_text.get((si, ii), ""),
                              heard_labels.get((si, ii), {}), dict(it.sources)) for ii, it in enumerate(s.items)]
        out.append((s, heard))
    if hearing is None or not hearing.available:
        notes.append("audio-only evidence and no offline labeler available: labels unknown")
    else:
        notes.append("labels below are what the offline labelers heard in the clips")
    return out, notes


def _dim_value(labels: dict, dim: str) -> Optional[float]:
    v = labels.get(dim)
    if isinstance(v, dict):
        v = v.get("mean")
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _aesthetic(labels: dict) -> Optional[float]:
    v = labels.get("overall")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    sc = labels.get("scores")
    if isinstance(sc, dict) and sc:
        vals = [float(x) for x in sc.values() if isinstance(x, (int, float))]
        if vals:
            return sum(vals) / len(vals)
    if labels.get("primary") in _TIER_VALUE:
        return _TIER_VALUE[labels["primary"]]
    return None


def _pair_means(ctx, sets, value, who: str, tag: str) -> tuple[dict[str, float], list[str]]:
    """Mean of ``value(labels)`` over the items of the first two sets (roles A and B) and one
    citation line per role that has values: ``Set 1 (speaker A): 0:10-0:20 A=0.61, mean 0.61``."""
    means: dict[str, float] = {}
    cites: list[str] = []
    for role, (s, items) in zip(("A", "B"), sets[:2]):
        vals = [(it, v) for it, v in ((it, value(it.labels)) for it in items) if v is not None]
        if vals:
            means[role] = sum(v for _, v in vals) / len(vals)
            cites.append(f"Set {s.index} ({who} {role}): " + ", ".join(
                _cite(it, f"{tag}{v:.2f}", speaker=ctx.setup.show_metadata) for it, v in vals)
                + f", mean {means[role]:.2f}")
    return means, cites


def _cite(it: EvidenceItem, *extra: str, speaker: bool = True) -> str:
    bits = [fmt_range(it.start, it.end)]
    if speaker and it.speaker:
        bits.append(it.speaker)
    bits.extend(x for x in extra if x)
    return " ".join(bits)


def _dimension(text: str, default: str = "valence") -> str:
    low = text.lower()
    for d in AVD_DIMENSIONS:
        if d in low:
            return d
    for word, d in (("positiv", "valence"), ("negativ", "valence"), ("energ", "arousal"), ("activ", "arousal"),
                    ("excit", "arousal"), ("calm", "arousal"), ("control", "dominance"), ("confiden", "dominance"),
                    ("assert", "dominance")):
        if word in low:
            return d
    return default


# ---------------------------------------------------------------------------------------
# Rule answerer
# ---------------------------------------------------------------------------------------
class RuleAnswerer:
    """Deterministic answers with cited rationales, one rule per query type."""
    name = "rule"

    def __init__(self, **_ignored):
        pass

    def answer(self, ctx, plan: Plan, evidence: Evidence) -> tuple[str, str, dict]:
        sets, notes = visible_sets(ctx, evidence)
        qt = ctx.query.query_type
        fn = {"state": self._state, "change": self._change, "comparison": self._comparison,
              "locate": self._locate, "locate_hard": self._locate, "reported": self._reported,
              "exhibited": self._exhibited, "time": self._song, "position": self._song,
              "audio": self._song}[qt]
        ans, why = fn(ctx, sets)
        if notes:
            why = why + " (" + "; ".join(notes) + ")"
        return ans, why, {"answerer": self.name}

    # emotion ----------------------------------------------------------------------
    def _state(self, ctx, sets):
        votes: dict[str, float] = defaultdict(float)
        cites = []
        for _, items in sets:
            for it in items:
                prim = emotion_of(str(it.labels.get("primary", ""))) if it.labels.get("primary") else None
                if prim is None:
                    continue
                w = max(it.end - it.start, 0.1)
                sc = it.labels.get("scores") or {}
                votes[prim] += w * (float(sc.get(prim, 1.0)) if isinstance(sc, dict) else 1.0)
                cites.append(_cite(it, f"primary={prim}", speaker=ctx.setup.show_metadata))
        if not votes:
            return "Neutral", "No emotion labels in the retrieved evidence; defaulting to Neutral."
        best = sorted(votes.items(), key=lambda kv: (-kv[1], EMOTIONS.index(kv[0]) if kv[0] in EMOTIONS else 99))[0][0]
        n = sum(1 for c in cites if f"primary={best}" in c)
        return best, f"{n} of {len(cites)} labelled segments show {best}: " + "; ".join(cites) + "."

    def _change(self, ctx, sets):
        dim = _dimension(ctx.query.text)
        thr = float(ctx.p("trend_threshold"))
        pts = []
        lo, hi = 0.0, math.inf
        for s, items in sets[:1] or []:
            # the target speaker: the one holding most of the window (when speakers are shown)
            dur: dict = defaultdict(float)
            for it in items:
                dur[it.speaker] += it.end - it.start
            main = max(sorted(dur, key=str), key=lambda k: dur[k]) if dur else None
            for it in items:
                v = _dim_value(it.labels, dim)
                if v is not None and (it.speaker == main or main is None):
                    pts.append((it, v))
            lo, hi = s.start, s.end
        if len(pts) < 2:
            cite = "; ".join(_cite(it, f"{dim}={v:.2f}") for it, v in pts)
            return "none", f"Not enough {dim} evidence to see a change ({cite or 'no labelled segments'})."
        if math.isfinite(hi) and hi > lo:
            mid = (lo + hi) / 2
        else:
            mid = (pts[0][0].start + pts[-1][0].end) / 2
        first = [v for it, v in pts if (it.start + it.end) / 2 < mid]
        second = [v for it, v in pts if (it.start + it.end) / 2 >= mid]
        if first and second:
            h1, h2 = sum(first) / len(first), sum(second) / len(second)
        else:
            h1, h2 = pts[0][1], pts[-1][1]
        delta = h2 - h1
        direction = "none" if abs(delta) < thr else ("rising" if delta > 0 else "falling")
        cites = "; ".join(_cite(it, f"{dim[0].upper()}={v:.2f}", speaker=ctx.setup.show_metadata) for it, v in pts)
        return direction, (f"{dim} moves from {h1:.2f} (first half) to {h2:.2f} (second half), "
                           f"delta {delta:+.2f}: {cites}.")

    def _comparison(self, ctx, sets):
        dim = _dimension(ctx.query.text, "arousal")
        means, cites = _pair_means(ctx, sets, lambda lab: _dim_value(lab, dim), "speaker", f"{dim[0].upper()}=")
        if len(means) < 2:
            win = next(iter(means), "A")
            return win, f"Only speaker {win} has {dim} evidence; " + ("; ".join(cites) or "no labelled segments") + "."
        win = "A" if means["A"] >= means["B"] else "B"
        return win, f"Speaker {win} has higher {dim} ({means['A']:.2f} vs {means['B']:.2f}): " + "; ".join(cites) + "."

    def _locate(self, ctx, sets):
        from .references import reference_label
        target = reference_label(ctx, "E")
        best, best_key = None, None
        for _, items in sets:
            for it in items:
                prim = emotion_of(str(it.labels.get("primary"))) if it.labels.get("primary") else None
                sc = it.labels.get("scores") or {}
                p = float(sc.get(target, 0.0)) if target and isinstance(sc, dict) else 0.0
                key = ((prim == target) if target else prim not in (None, "Neutral"), p,
                       float(it.sources.get("domain_emb", 0.0)), -it.start)
                if best_key is None or key > best_key:
                    best, best_key = it, key
        if best is None:
            return (f"unknown ({target or 'emotion unknown'})",
                    "No segment was retrieved in the search window.")
        emo = target or emotion_of(str(best.labels.get("primary"))) or "Neutral"
        t = (best.start + best.end) / 2
        quote = f' saying "{best.text}"' if best.text else ""
        match = "matches" if best_key[0] else "is the closest match to"
        return (f"{format_time(t)} ({emo})",
                f"{_cite(best, render_labels(best.labels) if best.labels else '', speaker=ctx.setup.show_metadata)}"
                f"{quote} {match} the reference emotion {target or '(reference not labelled)'}.")

    # clinical ----------------------------------------------------------------------
    def _reported(self, ctx, sets):
        cites = []
        for _, items in sets:
            for it in items:
                low = (it.text or "").lower()
                found = None
                for term in RESPIRATORY_TERMS:
                    for m in re.finditer(r"\b" + term + r"\w*", low):
                        if not _NEGATION.search(low[:m.start()]):
                            found = m.group(0)
                            break
                    if found:
                        break
                syms = it.labels.get("symptoms") or []
                if found or syms:
                    what = f'"{found}"' if found else "symptoms=" + ",".join(map(str, syms))
                    cites.append(_cite(it, what, speaker=ctx.setup.show_metadata))
        if cites:
            return "Yes", "Respiratory symptoms are mentioned: " + "; ".join(dict.fromkeys(cites)) + "."
        n = sum(len(i) for _, i in sets)
        return "No", f"None of the {n} retrieved turns mentions a respiratory symptom."

    def _exhibited(self, ctx, sets):
        cites = []
        for _, items in sets:
            for it in items:
                n = it.labels.get("cough_count")
                if not isinstance(n, int):
                    try:
                        n = cough_count(str(it.labels.get("primary", "")))
                    except ValueError:
                        n = 0
                ev = [e for e in (it.labels.get("events") or []) if e in ("cough", "sneeze", "throat_clear")]
                if n > 0 or ev:
                    cites.append(_cite(it, f"cough_count={n}" + (f" events={','.join(ev)}" if ev else ""),
                                       speaker=ctx.setup.show_metadata))
        if cites:
            return "Yes", "Audible respiratory events: " + "; ".join(dict.fromkeys(cites)) + "."
        n = sum(len(i) for _, i in sets)
        return "No", f"No cough or respiratory sound in the {n} retrieved segments."

    # song --------------------------------------------------------------------------
    def _song(self, ctx, sets):
        means, cites = _pair_means(ctx, sets, _aesthetic, "song", "overall=")
        if len(means) < 2:
            return "tie", "Cannot compare: " + ("; ".join(cites) or "no aesthetic labels retrieved") + "."
        d = means["A"] - means["B"]
        if abs(d) < float(ctx.p("tie_delta")):
            return "tie", f"Overall aesthetics are within {ctx.p('tie_delta')} ({d:+.2f}): " + "; ".join(cites) + "."
        win = "A" if d > 0 else "B"
        return win, f"Song {win} scores higher ({means['A']:.2f} vs {means['B']:.2f}): " + "; ".join(cites) + "."


# ---------------------------------------------------------------------------------------
# LLM answerer
# ---------------------------------------------------------------------------------------
_ORD = {1: "first", 2: "second", 3: "third"}


def answer_prompt(ctx, plan: Plan, evidence: Evidence, clip_labels: Sequence[str], heard: str = "") -> str:
    """Fill ``prompts/answer_<domain>.txt`` (evidence text per the setup, set guide, clip note).

    ``heard``: for a text model, the marked block of what the offline labelers heard in the
    clips (:func:`harp_lib.agent.heard.heard_block`); it takes the place of the clip note.
    """
    if ctx.setup.show_metadata or ctx.setup.strip_domain:
        ev = render_evidence(evidence, strip_domain=ctx.setup.strip_domain)
    else:
        ev = NO_TEXT
    guide = ""
    if len(plan.sets) >= 2:
        guide = "Evidence set time anchors:\n" + "\n".join(
            f"Set {i}: {ps.localize} ({_ORD.get(i, f'{i}th')} mentioned)" for i, ps in enumerate(plan.sets, 1))
    note = ""
    if clip_labels:
        note = (f"Audio clips attached: {', '.join(clip_labels)}. [Set N: ...] clips hold the recording audio "
                f"of evidence set N; [Snippet X] clips are the query's reference examples. Use what you hear.")
    if heard:
        note = heard
    return load_prompt(f"answer_{ctx.domain}").format(
        task=load_prompt(f"task_{ctx.domain}").strip(), evidence=ev, set_guide=guide, clip_note=note,
        query=ctx.query.text)


NO_TEXT = "(evidence is given as audio only)"


class LLMAnswerer:
    """Answer with an LLM: clips first ([Snippet X] then [Set N]), then the prompt.

    A text-only client (``supports_audio`` False, e.g. the offline ``local`` backend) gets no
    clips; in setups that attach audio it reads what the offline labelers heard in them, in a
    block marked as machine listening (:mod:`harp_lib.agent.heard`), next to the metadata
    evidence where the setup shows metadata.  Its reply is decoded under
    :data:`~harp_lib.agent.heard.ANSWER_SCHEMA` (``{"answer", "rationale"}``), so the decision
    comes first and apart from the rationale.
    """
    name = "llm"

    def __init__(self, client=None, **_ignored):
        self.client = client

    def answer(self, ctx, plan: Plan, evidence: Evidence) -> tuple[str, str, dict]:
        if not getattr(self.client, "supports_audio", True):
            from .heard import ANSWER_SCHEMA, heard_block, parse_answer
            heard = heard_block(ctx, evidence)
            prompt = answer_prompt(ctx, plan, evidence, [], heard=heard)
            r = self.client.complete([prompt], json_schema=ANSWER_SCHEMA,
                                     max_tokens=int(ctx.p("answer_max_tokens")))
            ans, why = parse_answer(r.text)
            return ans, why, {"answerer": self.name, "answerer_model": r.model_id, "answerer_cached": r.cached,
                              "audio_sec": 0.0, "heard": bool(heard), "raw_output": r.text}
        sr = int(ctx.p("clip_sample_rate"))
        clips = []
        if ctx.setup.attach_audio or ctx.p("attach_references_in_metadata_setups"):
            clips += reference_clips(ctx.references, sr=sr)
        if ctx.setup.attach_audio and ctx.audio_path is not None:
            clips += evidence_clips(evidence, ctx.audio_path, sr=sr)
        prompt = answer_prompt(ctx, plan, evidence, [c.label for c in clips])
        r = self.client.complete([*clips, prompt], max_tokens=int(ctx.p("answer_max_tokens")))
        ans, why = split_rationale(r.text)
        return ans, why, {"answerer": self.name, "answerer_model": r.model_id, "answerer_cached": r.cached,
                          "audio_sec": r.audio_sec, "raw_output": r.text}
