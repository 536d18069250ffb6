# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Judge agreement · can we trust the judges?
#
# The paper grades every answer with three LLM judges and reports how often they agree
# (Cohen's kappa per pair, Fleiss' kappa, percent agreement) and how lenient each is (share of
# YES).  On `mini` only the deterministic rule judge runs, so agreement is undefined and the
# table says so; on `paper` (`evaluate.judges: [qwen, gpt4o, gemini]`) it fills in.
# Writes `results/tables/judge_agreement.{csv,md,tex}`.
#
# **What to look at:** kappa above ~0.6 means the judges mostly agree; a judge whose leniency
# is far above the others inflates accuracy.

# %% tags=["parameters"]
profile = None     # params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
import pandas as pd

from harp_lib import pipeline
from harp_lib.evaluate import judge_agreement, load_scores
from harp_lib.evaluate.tables import paper_agreement
from harp_lib.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = pipeline.config(profile)
written = pipeline.write_tables(cfg)
scores = load_scores(cfg)
print("judges with scores:", sorted({s.judge for s in scores}))
print(open(written["judge_agreement"][1], encoding="utf-8").read().splitlines()[0])
judge_agreement(scores)

# %% [markdown]
# The paper's figures, for comparison:

# %%
paper_agreement()
