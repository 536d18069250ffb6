# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Answer: run one setup over one domain
#
# The agent plans, retrieves and then **answers** every question of the domain, writing the
# answer first (an emotion, a direction, A/B/tie, Yes/No or a time) and a **rationale** that
# cites its evidence (`[12.4s–17.1s]`, `primary=Happy`).  On the `mini` profile the planner and
# answerer are deterministic rule-based stand-ins for the paper's Qwen3-Omni (`agent.planner`,
# `agent.answerer`); on `paper` they call the served LLM.
#
# `dvc repro` runs this notebook once per domain with `setup = "all"` (the seven setups in one
# kernel, so models and reference-clip embeddings load once) and writes
# `data/predictions/<domain>/<setup>.jsonl`.
#
# **What to look at:** errors (there should be none), and a few answers with their rationales.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = "emotion"  # type: str  emotion | clinical | song
setup = "A5"  # type: str  A1..A7, or "all" (every setup of params.yaml; what dvc repro runs)
limit = None  # type: Optional[int]  only the first N queries (None: all)
overrides = {}  # type: dict  nested params overrides, e.g. {"agent": {"top_k": 1}} (used by the sweep)

# %%
import pandas as pd
from IPython.display import Markdown, display

from harp_lib.stages.common import config
from harp_lib.stages.infer import answer_stage
from harp_lib.stages.trace import trace_query
from harp_lib.config import get_setup
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile, overrides)
for s in (cfg.get("setups") if setup == "all" else [setup]):
    print(get_setup(s).describe())
print(f"profile {cfg.profile}: planner {cfg.get('agent.planner')}, answerer {cfg.get('agent.answerer')}, "
      f"top_k {cfg.get('agent.top_k')}")
preds = answer_stage(cfg, domain, setup, limit=None if limit is None else int(limit))

# %%
summary = pd.DataFrame([{"setup": p.setup, "predictions": 1, "errors": int(bool(p.error)),
                         "plans repaired": int(bool(p.plan.errors))} for p in preds]).groupby("setup").sum()
print(summary.to_string())
for p in [p for p in preds if p.error][:5]:
    print(" ", p.setup, p.query_id, p.error)

# %%
pd.set_option("display.max_colwidth", 120)
pd.DataFrame([{"setup": p.setup, "query": p.query_id, "type": p.query_type, "answer": p.answer,
               "rationale": p.rationale[:160]} for p in preds[:8]])

# %% [markdown]
# ## One question, step by step, under A1, A3 and A5
#
# The prediction files say *what* each setup answered.  Here one question goes through every step
# again (nothing is written): the **plan**, the **evidence** the answerer receives, the **answer**
# with its rationale, and the judge's **verdict**, under three setups side by side:
#
# * **A1**: keyword retrieval, metadata evidence (transcripts, labels, times);
# * **A3**: hybrid retrieval (keyword + label + vector tools), metadata evidence;
# * **A5**: hybrid retrieval, multimodal evidence (the metadata *and* the clips, which the
#   answerer hears).
#
# The question is the first one of this run where the three setups answered differently (the
# first question when they all agree, or when this run has only one setup).

# %%
trio = ("A1", "A3", "A5")
answers: dict = {}
for p in preds:
    answers.setdefault(p.query_id, {})[p.setup] = p.answer
qid = next((q for q, a in answers.items() if len({a.get(s) for s in trio}) > 1), preds[0].query_id)
traces = {s: trace_query(cfg, domain, qid, s) for s in trio}
q = traces["A5"].query
display(Markdown(f"**Question** `{qid}` ({q.query_type}): *{q.text}*\n\n**Truth**: `{q.ground_truth}`"))
pd.DataFrame({s: {"plan sets": len(t.plan.sets),
                  "evidence items": sum(len(es.items) for es in t.evidence.sets),
                  "retrieval hit (GT segments found)": t.score.retrieval_hit_rate_id,
                  "answer": t.answer,
                  "judge: answer right": t.judgement.answer,
                  "judge: rationale right": t.judgement.rationale} for s, t in traces.items()})

# %% [markdown]
# What each setup's answerer read (the first lines of its evidence), and the rationale it wrote.
# In A5 the first line lists the audio clips it heard; the rule answerer's listening labels
# appear in its rationale.

# %%
for s, t in traces.items():
    lines = t.evidence_text.splitlines()
    display(Markdown(f"### {get_setup(s).describe()}"))
    print("\n".join(lines[:14]) + (f"\n... ({len(lines) - 14} more lines)" if len(lines) > 14 else ""))
    print(f"\nanswer: {t.answer}\nrationale: {t.rationale}")
