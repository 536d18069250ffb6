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
# YES).  On `paper` (`evaluate.judges: [qwen, gpt4o, gemini]`) every answer has three verdicts
# and the table below compares them.
#
# On `mini` only the deterministic **rule judge** grades Table II.  So that agreement is not
# undefined, this notebook brings in a **real second judge**: the offline LLM judge (llm backend
# `local`: the `llm_offline.model` Qwen2.5-Coder GGUF, 1.5B on mini, through llama.cpp on the
# CPU) with the paper's judge prompts, on a **small fixed subset** so it fits the `dvc repro`
# budget: the rule baseline's A5 answers to the first `llm_rows.judge_per_type` queries of every query
# type of every domain (1: 10 answers on mini).  To stay cheap it is asked the **answer**
# verdict only (one model call per answer; the factual and faithful prompts would triple the
# cost), so only answer agreement is measured.  Its replies are cached by prompt, so a re-run with
# the same answers costs nothing.
#
# Measured on mini (shared 2-core machine): 10 answers, 10 model calls, 118 s of CPU for the whole
# run (imports, joining and loading the 1.1 GB weights, the calls); the judges agreed on 8 of 10
# answers, Cohen's kappa 0.62.  (The 0.5B model costs 46 s but says NO to almost everything:
# kappa -0.09.)  The cost of each run goes to `data/timings/judge_agreement.json`
# (machine-dependent, so not into this notebook).  Writes `results/tables/judge_agreement.{csv,md,tex}`.
#
# **What to look at:** kappa above ~0.6 means the judges mostly agree; a judge whose leniency
# is far above the others inflates accuracy.  Ten items give a very wide uncertainty: read the
# `all domains` row as "how often a small offline reader agrees with the rule checks", not as the
# paper's judge agreement.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
import pandas as pd

from harp_lib.stages.common import config, timings_path, write_json
from harp_lib.evaluate import judge_agreement, load_scores
from harp_lib.stages.second_judge import second_judge_scores, write_agreement
from harp_lib.evaluate.store import results_dir
from harp_lib.evaluate.tables import paper_agreement, write_judge_agreement
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
scores = load_scores(cfg)
judges = sorted({s.judge for s in scores})
print("judges with scores on every answer:", judges)
if len(judges) >= 2:       # e.g. the paper profile: every answer has several verdicts
    files = write_judge_agreement(scores, results_dir(cfg, "tables"), f"profile {cfg.profile}")
    agreement = judge_agreement(scores)
else:                      # mini / ci: the offline LLM judge on the fixed subset
    sub_scores, cost = second_judge_scores(cfg)
    out = write_agreement(cfg, sub_scores, cost)
    agreement, files = out["table"], out["files"]
    timing = timings_path(cfg, "judge_agreement.json")      # cost: machine-dependent, kept out of results/
    write_json(timing, cost)
    print(f"second judge: {cost['model']} on {cost['items']} answers (setups {', '.join(cost['setups'])}); "
          f"model calls and seconds of this run: {timing.relative_to(cfg.root)}")
print(open(files[1], encoding="utf-8").read().splitlines()[0])
agreement

# %% [markdown]
# The paper's figures, for comparison:

# %%
paper_agreement()
