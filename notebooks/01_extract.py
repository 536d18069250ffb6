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
# **What to look at:** the quality metrics (DER, WER, label accuracy) and the timeline plot.

# %% tags=["parameters"]
profile = None     # params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = None      # emotion | clinical | song; None: every domain of params.yaml
force = False      # recompute the stage-1 cache even when it is up to date

# %%
import matplotlib.pyplot as plt
import pandas as pd

from harp_lib import pipeline
from harp_lib.extract.pipeline import load_segments
from harp_lib.schema import Segment, read_jsonl
from harp_lib.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = pipeline.config(profile)
domains = [domain] if domain else list(cfg.get("domains"))
print(f"profile {cfg.profile}: extracting {domains} with backends {cfg.get('extract.backends')}")

# %%
metrics = {d: pipeline.extract_stage(cfg, d, force=force) for d in domains}

# %% [markdown]
# ## Quality against the ground truth
# `der` = diarization error rate (lower is better), `wer` = word error rate, `vad_f1` = speech
# frame F1; emotion / cough / tier accuracies compare the labels with the generator's truth;
# `boundary_f1` scores song boundaries within ±3 s.  `rtf_total_cpu` = CPU seconds per second
# of audio (kept out of `results/`, it depends on the machine).

# %%
keys = ["vad_f1", "der", "der_segments", "wer", "emotion_accuracy", "cough_count_accuracy", "cough_f1",
        "boundary_f1", "tier_accuracy", "rtf_total_cpu"]
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
