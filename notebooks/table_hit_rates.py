# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Hit rates · did the agent look in the right place?
#
# Accuracy mixes two failures: the agent looked in the wrong place, or it looked in the right
# place and misread the evidence.  Hit rates separate them (queries with ground-truth evidence only):
#
# * **plan hit rate** – does a planned window contain the ground-truth evidence?
# * **retrieval hit rate (id)** – is a ground-truth segment among the retrieved top-k?
#   (extracted segments are matched to ground truth by overlap);
# * **retrieval hit rate (overlap)** – does a retrieved segment overlap the evidence in time?
#
# Writes `results/tables/hit_rates.{csv,md,tex}` (through `write_tables`, `harp_lib/stages/tables.py`) and draws
# `results/figures/hitrate_vs_accuracy.png`.
#
# **What to look at:** the oracle setups (A6/A7) should be near 100 %; the vector setup (A2)
# has no time tool, so time-anchored questions tend to score lower.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
from IPython.display import Image, display

from harp_lib.stages.common import config
from harp_lib.stages.tables import write_figures, write_tables
from harp_lib.evaluate import hit_rate_table, load_scores
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
write_tables(cfg)
figures = write_figures(cfg)
hit_rate_table(load_scores(cfg, judge=cfg.get("evaluate.table_judge"))).round(1)

# %%
display(Image(filename=str(figures["hitrate_vs_accuracy"])))
display(Image(filename=str(figures["accuracy_by_type"])))
