# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 01 · Extraction: from raw audio to searchable segments
#
# HARP never hands an hour of audio to the language model.  It first cuts each recording into
# short **segments** and describes each one (paper §2.1):
#
# 1. **stage 1 – generic experts:** voice activity detection, speaker diarization (or song
#    boundaries for medleys), speech recognition, a text embedding of the transcript and an
#    audio embedding of the waveform;
# 2. **stage 2 – domain experts:** emotion (arousal/valence/dominance + a class), cough
#    detection, or music-aesthetics scores, plus a domain embedding.
#
# Which model does each job is set in `params.yaml` (`extract.backends`): offline CPU models on
# the `mini` profile, the paper's models on `paper`.  The stage writes
# `data/extract/<domain>/{segments,vectors}/` and scores itself against the ground truth in
# `results/metrics/extract_<domain>.json`.
#
# First we follow **one recording** through every step, calling the same library functions the
# extraction calls (on an excerpt, so it stays quick), with plots and audio players; then the
# whole extraction runs on every recording as one call and scores itself.
#
# **What to look at:** how each step narrows the audio down (speech → turns → words → labels),
# then the quality metrics (DER, WER, label accuracy) and the timeline plot.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = None  # type: Optional[str]  emotion | clinical | song; None: every domain of params.yaml
force = False  # type: bool  recompute the stage-1 cache even when it is up to date

# %%
import matplotlib.pyplot as plt
import pandas as pd

from harp_lib.stages.common import config
from harp_lib.stages.extract import extract_stage
from harp_lib.extract.pipeline import load_segments
from harp_lib.core.schema import Segment, read_jsonl
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
domains = [domain] if domain else list(cfg.get("domains"))
print(f"profile {cfg.profile}: extracting {domains} with backends {cfg.get('extract.backends')}")

# %% [markdown]
# ## One recording, step by step
# The first recording of the first domain, cut to an excerpt (the first minute of speech; two
# minutes of a song medley, so that a song boundary falls inside).  Every step below is the
# library call the extraction makes (`harp_lib/extract/pipeline.py`, `stage1` / `stage2`), with
# the backends of `params.yaml`.  On the excerpt the diarizer sees fewer voices than on the
# whole recording, so its turns can differ a little from the extraction's further down.

# %%
import numpy as np
import seaborn as sns
from IPython.display import Audio, Markdown, display

from harp_lib.core import audio
from harp_lib.extract.pipeline import fill_gaps, label_turns, transcribe_turns
from harp_lib.extract.settings import extract_settings, model_for
from harp_lib.extract.streaming import speech_regions
from harp_lib.extract.turns import segment_turns
from harp_lib.core.schema import Recording, resolve_under
from harp_lib.core.timespan import format_time

d = domains[0]
st = extract_settings(cfg, d)
sr = st["sr"]
bench = cfg.path("paths.benchmark") / d
rec = sorted(read_jsonl(bench / "recordings.jsonl", Recording), key=lambda r: r.id)[0]
excerpt = min(rec.duration, 120.0 if st["segmenter"] == "song_boundaries" else 60.0)
wave = audio.load(resolve_under(bench, rec.audio_path), sr=sr, end=excerpt)
gt = [g for g in read_jsonl(bench / "segments.jsonl", Segment) if g.recording_id == rec.id and g.start < excerpt]
print(f"{d} · {rec.id}: {format_time(rec.duration)} in all; the excerpt is the first {excerpt:.0f} s "
      f"({len(wave)} samples at {sr} Hz)")
print("backends:", {k: st[k] for k in ("vad", "segmenter", "segment", "asr", "labelers")})

# %% [markdown]
# ### Step 1 · Where is someone speaking (or singing)? — voice activity detection
# `speech_regions(vad, wave, sr)`: the VAD returns the spans that hold a voice; everything
# after this works inside them (ASR never transcribes silence or noise).

# %%
speech = speech_regions(model_for("vad", st["vad"]), wave, sr, st["stream_chunk_sec"])
t = np.arange(len(wave)) / sr
fig, ax = plt.subplots(figsize=(12, 2.2))
ax.plot(t[::40], wave[::40], lw=0.3, color="0.4")
for sp in speech:
    ax.axvspan(sp.start, sp.end, color="tab:green", alpha=0.25)
ax.set_xlim(0, excerpt)
ax.set_xlabel("time (s)")
ax.set_title(f"waveform; green = speech found by the VAD ({len(speech)} regions, "
             f"{sum(sp.duration for sp in speech):.0f} s of {excerpt:.0f} s)")
plt.show()

# %% [markdown]
# ### Step 2 · Who speaks when? — speaker turns (or song boundaries)
# The segmenter (`extract.segmenter`: speaker diarization for speech, change-point detection
# for medleys) cuts the audio into turns; then the paper's rules close short pauses
# (`fill_gaps`), split turns longer than `max_seg_sec` and merge turns shorter than
# `min_turn_sec` (`segment_turns`).  The bottom lane is the generator's ground truth.

# %%
raw = model_for(st["segmenter"], st["segment"]).segment(wave, sr, speech=speech)
turns = segment_turns(fill_gaps(raw, st["fill_gaps_sec"]), st["max_seg_sec"], st["min_turn_sec"])
lanes = [("segmenter output", raw), ("after the rules", turns), ("ground truth", gt)]
fig, ax = plt.subplots(figsize=(12, 2.6))
tags = sorted({x.speaker or "" for _, xs in lanes[:2] for x in xs})
gt_tags = sorted({g.speaker or "" for g in gt})
for row, (name, xs) in enumerate(lanes):
    for x in xs:
        tag = x.speaker or ""
        color = plt.cm.tab10((tags.index(tag) if name != "ground truth" else gt_tags.index(tag)) % 10)
        ax.broken_barh([(x.start, min(x.end, excerpt) - x.start)], (2 - row - 0.4, 0.8), color=color,
                       edgecolor="white")
ax.set_yticks([2, 1, 0], [n for n, _ in lanes])
ax.set_xlim(0, excerpt)
ax.set_xlabel("time (s)")
ax.set_title(f"{len(raw)} raw turns -> {len(turns)} turns; colours = speaker (or song) tags "
             f"(the tags are arbitrary names: compare the cuts, not the colours, with the ground truth)")
plt.show()
pd.DataFrame([{"start": x.start, "end": x.end, "tag": x.speaker} for x in turns]).head(8)

# %% [markdown]
# Listen: the first turn of each of the first two tags (two voices, or two songs), 5 s each.

# %%
first_of_tag = {}
for x in turns:
    first_of_tag.setdefault(x.speaker, x)
for x in list(first_of_tag.values())[:2]:
    display(Markdown(f"turn {format_time(x.start)}–{format_time(x.end)} · `{x.speaker}`"))
    display(Audio(wave[int(x.start * sr):int(min(x.end, x.start + 5.0) * sr)], rate=sr))

# %% [markdown]
# ### Step 3 · What is said? — speech recognition per turn
# `transcribe_turns`: the ASR backend on each turn, fed only the VAD's speech inside it; words
# carry times in seconds of the recording (the `keyword` tool and citations use them).

# %%
asr = transcribe_turns(st, wave, turns, speech)
with pd.option_context("display.max_colwidth", 100):
    display(pd.DataFrame([{"turn": f"{format_time(x.start)}–{format_time(x.end)}", "tag": x.speaker,
                           "transcript": a["text"], "words": len(a["words"])} for x, a in zip(turns, asr)]).head(8))
    display(pd.DataFrame([{"start": g.start, "end": g.end, "speaker": g.speaker, "ground-truth text": g.text}
                          for g in gt]).head(4))

# %% [markdown]
# ### Step 4 · How does it sound? — the domain labelers
# `label_turns`: the domain experts of `extract.backends.labelers` on every turn's audio
# (emotion with arousal / valence / dominance for speech, coughs and reported symptoms for
# consultations, aesthetics scores for songs).  These labels are what the `label` tool searches
# and what the answerer reads; the heatmap shows every numeric label per turn.

# %%
labels = label_turns(st, wave, turns, [a["text"] for a in asr])
lab = pd.DataFrame([{"turn": f"{format_time(x.start)}–{format_time(x.end)}", "tag": x.speaker,
                     **{k: v for k, v in lb.items() if not isinstance(v, (dict, list))}}
                    for x, lb in zip(turns, labels)])
numeric = lab.set_index("turn").select_dtypes("number").drop(columns=[c for c in ("cough_times",) if c in lab])
if not numeric.empty:
    fig, ax = plt.subplots(figsize=(12, 0.5 + 0.35 * len(numeric.columns)))
    sns.heatmap(numeric.T.astype(float), annot=len(numeric) <= 12, fmt=".2f", cmap="viridis", cbar=False, ax=ax)
    ax.set_title("numeric labels per turn")
    ax.set_xlabel("")
    plt.show()
lab.head(8)

# %%
pd.DataFrame([{"start": g.start, "end": g.end, "speaker": g.speaker,
               **{k: v for k, v in g.labels.items() if not isinstance(v, (dict, list))}} for g in gt]).head(8)

# %% [markdown]
# Above: the ground truth of the same span (what the generator put there), to compare with the
# labels.  Stage 2 also embeds each turn (`text`, `audio` and `domain` spaces) for the vector
# tools; `notebooks/02_index` searches them.
#
# ## The whole extraction, every recording
# The same steps for every recording of every domain, cached per recording and run in parallel
# (`extract.workers`), then scored against the ground truth.

# %%
metrics = {d: extract_stage(cfg, d, force=force) for d in domains}

# %% [markdown]
# ## Quality against the ground truth
# `der` = diarization error rate (lower is better), `wer` = word error rate, `vad_f1` = speech
# frame F1; emotion / cough / tier accuracies compare the labels with the generator's truth;
# `boundary_f1` scores song boundaries within ±3 s.  `rtf_total_cpu` = CPU seconds per second
# of audio, depends on the machine: it is kept out of `results/` and of this table, in
# `data/timings/extract_<domain>.json`.

# %%
keys = ["vad_f1", "der", "der_segments", "wer", "emotion_accuracy", "cough_count_accuracy", "cough_f1",
        "boundary_f1", "tier_accuracy"]
pd.DataFrame({d: {k: m.get(k) for k in keys} for d, m in metrics.items()}).T.dropna(axis=1, how="all")

# %% [markdown]
# ## One recording, extracted vs ground truth
# Top: ground-truth segments; bottom: extracted segments, coloured by speaker (or song).

# %%
d = domains[0]
bench = cfg.path("paths.benchmark") / d
gt = read_jsonl(bench / "segments.jsonl", Segment)
rec_id = sorted({s.recording_id for s in gt})[0]
ext = load_segments(cfg.path("paths.extract") / d, rec_id)
fig, ax = plt.subplots(figsize=(12, 2.4))
for row, segs in ((1, [s for s in gt if s.recording_id == rec_id]), (0, ext)):
    spk = sorted({s.speaker or "" for s in segs})
    for s in segs:
        ax.broken_barh([(s.start, s.end - s.start)], (row - 0.4, 0.8),
                       color=plt.cm.tab10(spk.index(s.speaker or "") % 10))
ax.set_yticks([0, 1], ["extracted", "ground truth"])
ax.set_xlabel("time (s)")
ax.set_title(f"{d} · {rec_id}: {len(ext)} extracted segments")
plt.show()

# %%
pd.DataFrame([{"start": s.start, "end": s.end, "speaker": s.speaker, "text": s.text[:60],
               "primary": s.labels.get("primary")} for s in ext[:8]])
