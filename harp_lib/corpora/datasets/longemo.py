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

This module runs the steps; each lives in its own module: ``longemo_params`` (knobs, expected
files), ``longemo_topics`` (topic phrases), ``longemo_source`` (reading the sources),
``longemo_candidates`` (candidates and their assignment), ``longemo_episode`` (recording, ground
truth, reference clips) and ``longemo_queries`` (one builder per query type).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Union

from tqdm.auto import tqdm

from harp_lib.corpora.datasets.common import SourceError, require_source, rng_for, write_corpus
from harp_lib.corpora.datasets.longemo_candidates import (_single, assign_candidates, find_ct_trends,
                                                          find_multi_spk_windows, find_st_events)
from harp_lib.corpora.datasets.longemo_episode import _Clips, _Episode
from harp_lib.corpora.datasets.longemo_params import NON_TARGET_CODES, NV_URL, EmotionParams, emotion_expected
from harp_lib.corpora.datasets.longemo_queries import (_change_queries, _comparison_queries, _locate_hard_queries,
                                                       _locate_queries, _state_queries)
from harp_lib.corpora.datasets.longemo_source import LongEmoSource, iter_all_data
from harp_lib.corpora.datasets.longemo_topics import PAPER_TOPIC_MODEL, make_topic_generator

__all__ = ["prepare_emotion"]


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
