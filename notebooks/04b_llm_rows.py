# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04b · The offline LLM agent: LLM planner + LLM answerer on CPU
#
# The same agent loop as notebook 04, with both the planner and the answerer played by a small
# instruction LLM running in-process (llama.cpp via `xllamacpp`, Qwen2.5-Coder-Instruct GGUF from
# PyPI part packages; `llm_offline` in params.yaml, `harp_lib/llm/local.py`).  The planner fills the
# question's typed intent on one line under a grammar (`harp_lib/agent/llm_intent.py`), checked
# against the rule parse; the evidence sets follow from the intent; the answerer is a text
# model, so for setups with audio it reads what the offline labelers **heard** in the attached
# clips, in a block marked as machine listening.  Neither sees the query type or ground truth.
#
# On CPU it is slow, so it runs a fixed stratified subset (`llm_rows.per_type` query ids of every
# query type) for every setup, then judges and scores it with the rule judge into
# `data/llm/`.  Replies are cached by prompt hash: a re-run makes no model call.
#
# **What to look at:** plan repairs and intent notes (where the LLM's intent was checked against the
# rule parse), and the answers next to the rule agent's.  The run's seconds and model calls go to the
# log, not the page (a second execution gives the same page).

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = "emotion"  # type: str  emotion | clinical | song

# %%
import pandas as pd

from harp_lib.stages.common import config
from harp_lib.stages.trace import trace_query
from harp_lib.stages.llm_rows import llm_options, rows_config, run_llm_rows, subset_query_ids
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
print(f"model {llm_options(cfg)['model']}, {cfg.llm_offline.threads} thread(s); subset of {domain}:",
      subset_query_ids(cfg, domain))
info = run_llm_rows(cfg, domain)   # its seconds, model calls and cached replies go to the log, not the page
print(f"{info['n_queries']} questions x {len(info['setups'])} setups ({', '.join(info['setups'])}), "
      f"errors: {info['errors']}")

# %%
from harp_lib.agent.runner import prediction_path
from harp_lib.core.schema import Prediction, read_jsonl

rcfg = rows_config(cfg)
preds = [p for s in info["setups"] for p in read_jsonl(prediction_path(rcfg, domain, s), Prediction)]
pd.set_option("display.max_colwidth", 100)
pd.DataFrame([{"setup": p.setup, "query": p.query_id, "plan sets": len(p.plan.sets),
               "plan repairs": len(p.plan.errors), "answer": p.answer[:60], "error": p.error} for p in preds])

# %% [markdown]
# ## One question: the LLM agent next to the rule agent
#
# The rows above are the LLM agent's.  Here one question of the subset is put next to the rule
# agent on the same setup (A3 when this run has it): the **plan** each planner wrote (the window
# phrase and the tools), the **answer**, and the rule judge's **verdict**.  The question is the first
# one where the two agents answered differently.  The rule agent runs again in memory (nothing is
# written); the LLM side is read from the files this stage just wrote, so no model is called.

# %%
from IPython.display import Markdown, display

from harp_lib.evaluate.store import judgements_path
from harp_lib.core.schema import Judgement
from harp_lib.viz.walkthrough import plan_lines

shown = "A3" if "A3" in info["setups"] else info["setups"][0]
llm_preds = {p.query_id: p for p in preds if p.setup == shown}
llm_verdicts = {j.query_id: j for j in read_jsonl(judgements_path(rcfg, domain, shown, "rule"), Judgement)}
rule = {qid: trace_query(cfg, domain, qid, shown, judge="rule") for qid in llm_preds}
qid = next((q for q in llm_preds if llm_preds[q].answer != rule[q].answer), next(iter(llm_preds)))
tr, lp, lj = rule[qid], llm_preds[qid], llm_verdicts.get(qid)

display(Markdown(f"**Question** `{qid}` ({tr.query.query_type}, setup {shown}): *{tr.query.text}*\n\n"
                 f"**Truth**: `{tr.query.ground_truth}`"))
pd.DataFrame({"rule agent": {"plan": " | ".join(plan_lines(tr.plan)), "answer": tr.answer,
                             "judge: answer right": tr.judgement.answer,
                             "judge: rationale right": tr.judgement.rationale, "rationale": tr.rationale[:300]},
              "LLM agent": {"plan": " | ".join(plan_lines(lp.plan)), "answer": lp.answer,
                            "judge: answer right": getattr(lj, "answer", None),
                            "judge: rationale right": getattr(lj, "rationale", None), "rationale": lp.rationale[:300]}})
