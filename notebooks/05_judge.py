# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · Judge and score one domain/setup
#
# Every answer gets three binary verdicts (paper §3): **answer** (is the decision right?),
# **factual** (are the cited times/labels true?) and **faithful** (does the rationale follow from
# the evidence shown?).  Rationale accuracy = factual AND faithful (factual alone for the
# audio-only setups A4/A6).  On `mini` the judge is a deterministic rule judge; on `paper`
# three LLM judges (`evaluate.judges`).  Scores also carry the **hit rates**: did the plan's
# windows, and did the retrieved segments, cover the ground-truth evidence?
#
# Writes `data/judgements/<domain>/<setup>.<judge>.jsonl` and `data/scores/…`.
#
# **What to look at:** accuracy per query type, and a few judged answers with the judge's reasons.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = "emotion"  # type: str  emotion | clinical | song
setup = "A5"  # type: str  A1..A7, or "all" (every setup of params.yaml; what dvc repro runs)
overrides = {}  # type: dict  nested params overrides (the sweep redirects paths with it)

# %%
import pandas as pd

from harp_lib.stages.common import config
from harp_lib.stages.judge import domain_setup_scores, judge_stage
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile, overrides)
scores = judge_stage(cfg, domain, setup)
per_type = domain_setup_scores(scores)
per_type.pivot_table(index=["judge", "setup"], columns="query_type", values="answer_%").round(1)

# %% [markdown]
# Rationale accuracy and hit rates, per setup and query type:

# %%
per_type.round(1)

# %%
from harp_lib.evaluate.store import judgements_path
from harp_lib.core.schema import Judgement, read_jsonl

judge = cfg.get("evaluate.judges")[0]
first = cfg.get("setups")[0] if setup == "all" else setup
js = read_jsonl(judgements_path(cfg, domain, first, judge), Judgement)
print(f"judge {judge}, setup {first}:")
pd.set_option("display.max_colwidth", 100)
pd.DataFrame([{"query": j.query_id, "answer": j.answer, "factual": j.factual, "faithful": j.faithful,
               **{f"why {k}": v for k, v in sorted(j.reasons.items())}} for j in js[:6]])
