# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 02 · The index: one search engine per domain
#
# The agent finds evidence with **tools**.  Each tool is a search over the extracted segments of
# one recording, inside a time window:
#
# | tool | searches |
# |---|---|
# | `time` | every segment in the window |
# | `keyword` | transcripts (word overlap) |
# | `label` | labels (`primary=Happy`, `2 cough`, `High`) |
# | `text_emb` / `audio_emb` / `domain_emb` | cosine similarity in an embedding space (FAISS) |
#
# This notebook builds `data/index/<domain>/` from the extraction output (from scratch every
# time, so re-running can never duplicate vectors) and tries each tool once.
#
# **What to look at:** the spaces and their dimensions, and whether the sample searches return
# sensible segments.

# %% tags=["parameters"]
profile = None     # params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = None      # emotion | clinical | song; None: every domain

# %%
import pandas as pd

from harp_lib import pipeline
from harp_lib.timespan import Span
from harp_lib.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = pipeline.config(profile)
domains = [domain] if domain else list(cfg.get("domains"))
summaries = [pipeline.index_stage(cfg, d) for d in domains]
pd.DataFrame([{"domain": s["domain"], "segments": s["segments"], "recordings": s["recordings"],
               **{f"{k} dim": v["dim"] for k, v in s["spaces"].items()}} for s in summaries])

# %% [markdown]
# ## Try the tools
# The first recording of the first domain, searched over its first ten minutes.

# %%
from harp_lib.index import SegmentIndex

ix = SegmentIndex.load(cfg.path("paths.index") / domains[0])
rec = ix.recording_ids()[0]
window = Span(0, 600)
first = ix.segments(rec)[0]
word = max(first.text.split(), key=len) if first.text.strip() else "the"
label = first.labels.get("primary", "")
print(f"recording {rec}: {len(ix.segments(rec))} segments; keyword {word!r}, label {label!r}")
results = {"time": ix.search_time(rec, window)[:5],
           "keyword": ix.search_keyword(rec, window, word, k=5),
           "label": ix.search_label(rec, window, label)[:5] if label else []}
for space in sorted(ix.spaces):
    results[f"{space}_emb (like the first segment)"] = ix.search_vector(space, rec, window,
                                                                        ix.vector(space, first.id), k=5)
pd.DataFrame([{"tool": t, "segment": sid, "score": sc, "start": ix.segment(sid).start,
               "text": ix.segment(sid).text[:50]} for t, hits in results.items() for sid, sc in hits])
