# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Table II · the offline LLM agent next to the rule baseline
#
# Rows per setup: **rule** (the rule planner + rule answerer on all queries: the baseline rows of
# `table2.md`), **rule@subset** (the same predictions on the LLM subset only) and **LLM@subset**
# (LLM planner + LLM answerer on the `local` backend, notebook 04b).  Compare LLM@subset with
# rule@subset: same questions, same judge.  Writes `results/tables/table2_llm.{csv,md,tex}` and
# `results/metrics/table2_llm.json`.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
from harp_lib import pipeline
from harp_lib.agent.llm_rows import llm_table, write_llm_table
from harp_lib.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = pipeline.config(profile)
written = write_llm_table(cfg)
print(open(written["table2_llm"], encoding="utf-8").read().splitlines()[0])
llm_table(cfg).round(1)
