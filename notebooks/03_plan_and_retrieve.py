# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Plan and retrieve: how the agent finds evidence
#
# For every question HARP first writes a **plan**: a few *evidence sets*, each a time window
# ("around 3 minutes", "the 2nd song", "the whole recording") plus the tools to run there
# (a keyword, a label, "audio like reference clip A", …).  Each tool returns up to 5–10 hits;
# the hits of a set are **merged** (scores summed per segment) and the **top 3** are kept
# (`agent.top_k`).  The setup decides which tools the planner may use:
#
# | setup | retrieval | evidence shown to the answerer |
# |---|---|---|
# | A1 | keyword (time, keyword, label) | metadata |
# | A2 | vector (text / audio / domain embeddings) | metadata |
# | A3 | hybrid (all tools) | metadata |
# | A4 | hybrid | audio only |
# | A5 | hybrid | metadata + audio |
# | A6 / A7 | oracle (ground-truth window) | audio / both |
#
# **What to look at:** for each question, the plan, every tool's hits (and which survived the
# merge), and the final top-3 evidence the answerer sees.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = "emotion"  # type: str  emotion | clinical | song
setup = "A5"  # type: str  A1..A7
n_queries = 3  # type: int  questions shown (one per query type, round robin)

# %%
from IPython.display import Markdown, display

from harp_lib.stages.common import config
from harp_lib.stages.trace import pick_queries, trace_query
from harp_lib.config import get_setup
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
print(get_setup(setup).describe(), "| tools:", ", ".join(get_setup(setup).tools))
queries = pick_queries(cfg, domain, n_queries)

# %%
traces = [trace_query(cfg, domain, q.query_id, setup) for q in queries]
for tr in traces:
    display(Markdown(f"### `{tr.query.query_id}` ({tr.query.query_type})\n*{tr.query.text}*"))
    for line in tr.plan_lines():          # the fields the planner filled, and the window searched
        print("  " + line)
    if tr.plan.errors:
        print("  plan repairs:", tr.plan.errors)
    display(tr.hits_table())
    print(tr.evidence_text)

# %% [markdown]
# The rendered evidence above is exactly the text the answerer receives (in audio-only setups
# A4/A6 the transcripts and labels are hidden and the clip audio is attached instead).
