# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · Explore: click through one recording and one question
#
# The interactive explorer (`harp_lib.viz.explore`, [docs/explorer.md](../docs/explorer.md)) puts
# every step of the pipeline for one recording on one screen: the segment timeline (speakers or
# songs, coloured by speaker or label), a segment's audio and transcript, and for a question the
# plan, each tool's hits, the merged top-k (outlined on the timeline), the evidence as the model
# sees it, the answer, the rationale and the judges' verdicts.
#
# Run this notebook in JupyterLab after `dvc repro` (it needs the benchmark, the extraction and the
# index of the domain): the first code cell shows the live widget.  The rest of the notebook does
# the same clicks from Python (`ex.state` holds everything the widget shows), so the executed page
# in `results/notebooks/` shows them too.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = "emotion"  # type: str  emotion | clinical | song
setup = "A5"  # type: str  A1..A7

# %%
from harp_lib.stages.common import config
from harp_lib.app.notebook import check_parameters
from harp_lib.viz import explore

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
ex = explore(cfg, domain)      # the live widget (JupyterLab); a static page shows only its text
st = ex.state

# %% [markdown]
# **Pick a segment** (the list under the timeline): its window is framed on the timeline, its
# transcript and labels are shown, and its audio plays.

# %%
seg = st.segments[min(3, len(st.segments) - 1)]
st.select_segment(seg.id)
print(st.segment_details())

# %% [markdown]
# **Pick a question and a setup, then Run**: the tabs show the plan, each tool's hits, the merged
# top-k, the evidence text, the answer and the verdicts; the merged top-k is outlined on the timeline.

# %%
q = st.queries[0]
st.select_query(q.query_id)
st.select_setup(setup)
st.run()
for name, text in st.views().items():
    if name != "prompt":       # the full answerer prompt is long: see the widget's prompt tab
        print(f"--- {name}\n{text}")

# %%
st.timeline_figure()
