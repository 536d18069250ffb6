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
from harp_lib.stages.common import config
from harp_lib.stages.llm_rows import llm_table, write_llm_table
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
written = write_llm_table(cfg)
print(open(written["table2_llm"], encoding="utf-8").read().splitlines()[0])
llm_table(cfg).round(1)

# %% [markdown]
# ## Rule vs LLM on the same questions, with their uncertainty
#
# Each point is a setup's Table II Avg on the LLM subset, for the rule agent (rule@subset) and the
# LLM agent (LLM@subset), with a 95 % bootstrap interval over the subset's questions
# (`harp_lib.evaluate.spread.macro_summary`: each replicate resamples the questions of every
# domain × query type cell).  Where the intervals overlap, the table cannot tell the two agents
# apart.  A cell with a single question cannot vary under this resampling, so with one question per
# cell (`llm_rows.per_type: 1`) the interval shrinks to the point: that is no certainty, only too
# few questions to measure it (the caption of `table2_llm.md` gives the subset size).

# %%
import matplotlib.pyplot as plt

from harp_lib.stages.llm_rows import rows_config
from harp_lib.evaluate.scoring import load_scores
from harp_lib.evaluate.spread import macro_summary

judge = cfg.evaluate.table_judge
llm_scores = [s for s in load_scores(rows_config(cfg)) if s.judge == judge]
subset = {(s.domain, s.query_id) for s in llm_scores}
rule_scores = [s for s in load_scores(cfg) if s.judge == judge and (s.domain, s.query_id) in subset]
summ = {"rule@subset": macro_summary(rule_scores)["rows"], "LLM@subset": macro_summary(llm_scores)["rows"]}
setups = [r for r in summ["LLM@subset"] if r.startswith("A")]
fig, ax = plt.subplots(figsize=(7.5, 3.4))
for k, (label, colour) in enumerate((("rule@subset", "tab:blue"), ("LLM@subset", "tab:orange"))):
    rows = summ[label]
    xs = [i + (k - 0.5) * 0.25 for i in range(len(setups))]
    ys = [rows[s]["avg"] for s in setups]
    err = [[rows[s]["avg"] - rows[s]["ci95"][0] for s in setups], [rows[s]["ci95"][1] - rows[s]["avg"] for s in setups]]
    ax.errorbar(xs, ys, yerr=err, fmt="o", capsize=3, color=colour, label=label)
ax.set_xticks(range(len(setups)), setups)
ax.set_xlim(-0.6, len(setups) - 0.4)
ax.set_ylim(-5, 105)
ax.set_ylabel("Table II Avg (%)")
ax.set_title(f"Rule vs LLM agent on the same {len(subset)} questions (95 % bootstrap CI)")
ax.legend(fontsize=8)
fig.tight_layout()
