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
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = None  # type: Optional[str]  emotion | clinical | song; None: every domain

# %%
import pandas as pd

from harp_lib.stages.common import config
from harp_lib.stages.index import index_stage
from harp_lib.stages.trace import pick_queries
from harp_lib.core.timespan import Span
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
domains = [domain] if domain else list(cfg.get("domains"))
summaries = [index_stage(cfg, d) for d in domains]
pd.DataFrame([{"domain": s["domain"], "segments": s["segments"], "recordings": s["recordings"],
               **{f"{k} dim": v["dim"] for k, v in s["spaces"].items()}} for s in summaries])

# %% [markdown]
# ## Ask the index real questions
# Below are real questions of the benchmark (`queries.jsonl`: the text a user types; the first
# question of each of three query types).  The agent's rule planner reads **only the question
# text** and turns it into tool calls (setup A3: every tool, evidence as text); each tool then
# searches the index.  Every hit is explained: the tool, its score, where the segment lies, its
# speaker, labels and transcript, and *why* the tool returned it.  `kept` marks the hits that
# survive the merge into the top-3 evidence the answerer reads.
#
# How to read the scores: keyword **1.0** = the phrase occurs verbatim (less: the share of its
# content words present); label = the labeler's probability; `text_emb` / `audio_emb` /
# `domain_emb` = cosine similarity (1.0 only for an identical vector); time = every segment of
# the window (higher nearer the named moment).

# %%
from IPython.display import Markdown, display

from harp_lib.retrieval.tools import QueryEncoder
from harp_lib.evaluate.store import load_benchmark
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.core.schema import Recording, read_jsonl
from harp_lib.core.timespan import format_time
from harp_lib.viz import trace_query
from harp_lib.viz.hits import explain_hits, explain_trace

d = domains[0]
ix = SegmentIndex.load(cfg.path("paths.index") / d)
bench = load_benchmark(d, cfg)
recs = {r.id: r for r in read_jsonl(bench.root / "recordings.jsonl", Recording)}
questions = pick_queries(cfg, d, 3)
with pd.option_context("display.max_colwidth", None, "display.width", 250):
    for q in questions:
        tr = trace_query(q, ix, "A3", cfg, recording=recs[q.recording_id], bench_dir=bench.root,
                         judges=(), with_clips=False, hearing=False)
        plan = "; ".join(f"set {i}: " + ", ".join(f"{t}={getattr(ps, t)!r}" for t in ps.tools_used())
                         + f" in {ps.localize!r}" for i, ps in enumerate(tr.plan.sets, 1))
        display(Markdown(f"**{q.query_id}** · recording `{q.recording_id}` ({format_time(recs[q.recording_id].duration)})"
                         f"\n\n> {q.text}\n\n*planner's tool calls:* {plan}"))
        display(explain_trace(tr, ix, top=3))

# %% [markdown]
# ## Your own words
# The vector tools search by meaning, so a question needs no word of the transcript.  The same
# phrase, embedded by the index's own text embedder, against every segment of the recording
# (`text_emb`), next to a plain word search (`keyword`) for one of its words.  Low cosines (below
# ~0.3) mean "nothing here is about that": the tool still returns its best five.

# %%
free_text, word = {"emotion": ("talking about the garden and growing vegetables", "garden"),
                   "clinical": ("I have been coughing and my chest hurts", "cough"),
                   "song": ("a song about love and the night", "love")}.get(d, ("what is this about", "the"))
rec = questions[0].recording_id
everything = Span(0, recs[rec].duration)
vec = QueryEncoder(ix.spaces).text(free_text)
hits = {"text_emb": ix.search_vector("text", rec, everything, vec, k=5) if "text" in ix.spaces else [],
        "keyword": ix.search_keyword(rec, everything, word, k=5)}
print(f"recording {rec}: text_emb {free_text!r}, keyword {word!r}")
with pd.option_context("display.max_colwidth", None, "display.width", 250):
    display(explain_hits(ix, hits, {"text_emb": free_text, "keyword": word}))
