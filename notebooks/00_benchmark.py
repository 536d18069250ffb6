# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 00 · The benchmark: long recordings, questions and ground truth
#
# HARP answers questions about **long** audio: an hour-long podcast ("how does the host's mood
# change after the break?"), a doctor–patient consultation ("did the patient cough?"), a
# medley of songs ("is the 2nd song more memorable than the 5th?").  Every later notebook works
# on the benchmark this one builds:
#
# * `data/benchmark/<domain>/recordings/*.wav` – 16 kHz mono recordings,
# * `queries.jsonl` – the questions with their ground-truth answers,
# * `segments.jsonl` – ground-truth segments (who spoke when, with which emotion, cough, song …),
# * `references/*.wav` – reference clips some questions point at ("this speaker", "this song").
#
# On the `mini` and `ci` profiles the benchmark is **generated** offline from a seed (TTS
# voices, real cough recordings, synthesised songs; see `docs/dataset_card.md`); on the `paper`
# profile it is prepared from the paper's corpora (`harp prepare`, `docs/paper.md`).
#
# **What to look at:** the table of query types per domain and the three audio players at the end.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`, mini)
build = True  # type: bool  False: only inspect an existing benchmark

# %%
import pandas as pd
from IPython.display import Audio, Markdown, display

from harp_lib.stages.common import config
from harp_lib.stages.benchmark import benchmark_summary, build_benchmark, listening_examples
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
print(f"profile {cfg.profile}: benchmark source {cfg.get('benchmark.source')!r} -> {cfg.get('paths.benchmark')}")

# %% [markdown]
# ## Build it
# `build_benchmark` (`harp_lib/stages/benchmark.py`) runs the generator (or `harp prepare`) and writes
# `results/metrics/benchmark.json`.  The same seed always gives byte-identical files.

# %%
summary = build_benchmark(cfg) if build else benchmark_summary(cfg)

# %% [markdown]
# ## What is in it
# One row per domain and query type.  Table II of the paper has one column per query type.

# %%
# NBVAL_CHECK_OUTPUT
rows = [{"domain": d, "query type": t, "queries": n}
        for d, v in summary["domains"].items() for t, n in v["query_types"].items()]
print(pd.DataFrame(rows).to_string(index=False))
print(f"total: {summary['total_queries']} queries, {summary['total_audio_minutes']:.1f} min of audio")

# %%
pd.DataFrame(summary["domains"]).T[["recordings", "audio_minutes", "queries"]]

# %% [markdown]
# ## Listen
# The first question of each domain, with 12 seconds of its recording starting at the
# ground-truth evidence.

# %%
for ex in listening_examples(cfg):
    display(Markdown(f"**{ex.domain}** · `{ex.query_id}` · {ex.start:.1f}–{ex.end:.1f} s  \n"
                     f"*{ex.question}*  \nground truth: **{ex.answer}**"))
    display(Audio(ex.wave, rate=ex.sr))
