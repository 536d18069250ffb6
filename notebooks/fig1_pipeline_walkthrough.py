# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 1 · One question, followed through every step
#
# The paper's Figure 1 shows the HARP pipeline.  Here we follow one real question of the
# benchmark through it:
#
# 1. **the question** and its recording (with the ground-truth answer, which the agent never sees);
# 2. **the plan** the planner writes (time windows + tools);
# 3. **every tool's hits**, then the merged **top-3 evidence**;
# 4. **the evidence text** the answerer receives, and the **audio clip** it would hear;
# 5. **the answer and rationale**, and the **judge's verdicts**.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)
domain = "emotion"  # type: str  emotion | clinical | song
setup = "A5"  # type: str  A1..A7
query_id = None  # type: Optional[str]  a query id; None: the first query of the domain

# %%
import matplotlib.pyplot as plt
from IPython.display import Audio, Image, Markdown, display

from harp_lib.core import audio
from harp_lib.stages.common import config, save_figure
from harp_lib.stages.figures import walkthrough_figures
from harp_lib.stages.trace import pick_queries, trace_query
from harp_lib.core.schema import Recording, read_jsonl, resolve_under
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
qid = query_id or pick_queries(cfg, domain, 1)[0].query_id
tr = trace_query(cfg, domain, qid, setup)
q = tr.query
display(Markdown(f"**1. Question** `{q.query_id}` ({q.query_type}, recording `{q.recording_id}`)\n\n"
                 f"> {q.text}\n\nground truth: `{q.ground_truth}`"))

# %%
display(Markdown("**2. Plan**"))
for line in tr.plan_lines():   # the fields the planner filled (unset ones left out), and the window searched
    print(line)

# %%
display(Markdown("**3. Tool hits** (`kept` = survived the merge into the top-k)"))
tr.hits_table()

# %%
bench = cfg.path("paths.benchmark") / domain
rec = {r.id: r for r in read_jsonl(bench / "recordings.jsonl", Recording)}[q.recording_id]
fig, ax = plt.subplots(figsize=(12, 2.2))
for g in tr.gt_segments:
    ax.axvspan(g.start, g.end, color="gold", alpha=.6, label="ground-truth evidence")
for es in tr.evidence.sets:
    ax.broken_barh([(es.start, es.end - es.start)], (1.1, 0.5), color="lightsteelblue")
    for it in es.items:
        ax.broken_barh([(it.start, it.end - it.start)], (0.3, 0.6), color="tab:blue")
spans = [(g.start, g.end) for g in tr.gt_segments] + [(e.start, e.end) for e in tr.evidence.sets if e.end > e.start]
lo, hi = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else (0.0, rec.duration)
ax.set_xlim(max(0.0, lo - 30), min(rec.duration, hi + 30))     # zoom on the action, ±30 s
ax.set_yticks([0.6, 1.35], ["retrieved top-k", "plan windows"])
ax.set_xlabel("time (s)")
handles, labels = ax.get_legend_handles_labels()
if handles:
    ax.legend(handles[:1], labels[:1], loc="upper right", fontsize=8)
ax.set_title(f"{q.query_id} ({setup}): plan windows, retrieved segments and ground-truth evidence")
fig.tight_layout()
save_figure(fig, cfg.path("paths.results") / "figures" / "fig1_walkthrough.png")
fig

# %%
display(Markdown("**4. Evidence the answerer receives**"))
print(tr.evidence_text)
es = next((e for e in tr.evidence.sets if e.clip_end > e.clip_start), None)
if es is not None:
    clip = audio.load(resolve_under(bench, rec.audio_path), sr=16000, start=es.clip_start,
                      end=min(es.clip_end, es.clip_start + 20.0))
    display(Markdown(f"first clip: {es.clip_start:.1f}–{es.clip_end:.1f} s (first 20 s shown)"))
    display(Audio(clip, rate=16000))

# %%
j = tr.judgement
display(Markdown(f"**5. Answer** {tr.answer}\n\n**Rationale** {tr.rationale}\n\n"
                 f"**Judge `{j.judge}`**: answer {j.answer}, factual {j.factual}, faithful {j.faithful} "
                 f"· plan hit {tr.score.plan_hit_rate}, retrieval hit {tr.score.retrieval_hit_rate_id}"))
for part, why in j.reasons.items():   # why the judge decided each verdict
    print(f"{part}: {why}")

# %% [markdown]
# ## The same walk-through as one picture per domain
#
# `harp_lib.viz` draws every step above in one figure: the question, the whole recording with the
# searched windows and the merged top-k (outlined), a labelled zoom with the ground-truth evidence
# (★), each tool's hits per set, and the plan / evidence / answer text with the judge's verdicts.
# These are the figures shown in the README (`results/figures/fig1_walkthrough_<domain>.png`).
# For an interactive version, run `harp_lib.viz.explore()` in JupyterLab.

# %%
paths = walkthrough_figures(cfg, setup)
for d, p in paths.items():
    display(Markdown(f"**{d}**: `{p.name}`"))
    display(Image(filename=str(p)))
