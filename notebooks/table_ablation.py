# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Ablation · where do the errors come from?
#
# The same rule answerer, given three kinds of evidence per query: the ground-truth windows
# (oracle, A7), what hybrid retrieval found (A5), and nothing at all.  Oracle above retrieved
# means retrieval loses answers; retrieved near "no evidence" means the answerer cannot use
# what it is shown.  Writes `results/tables/ablation.{csv,md,tex}`
# (`harp_lib.evaluate.ablation.write_ablation`).

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
from harp_lib.stages.common import config
from harp_lib.evaluate.ablation import ablation_table, write_ablation
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
write_ablation(cfg)
ablation_table(cfg)

# %% [markdown]
# The same numbers as a picture, one panel per domain: for each query type, the bar of
# **oracle** evidence (what a perfect retriever would give), **retrieved** evidence (A5) and **no**
# evidence.  The gap oracle → retrieved is what retrieval loses; the gap retrieved → none is what
# the evidence is worth to the answerer.

# %%
import matplotlib.pyplot as plt
import numpy as np

tab = ablation_table(cfg)
cols = [c for c in tab.columns if c.startswith(("oracle evidence", "retrieved evidence", "no evidence"))]
domains = list(dict.fromkeys(tab["domain"]))
fig, axes = plt.subplots(1, len(domains), figsize=(4.2 * len(domains), 3.6), squeeze=False, sharey=True)
for ax, d in zip(axes[0], domains):
    sub = tab[tab["domain"] == d]
    x = np.arange(len(sub))
    for k, (c, colour) in enumerate(zip(cols, ("tab:green", "tab:blue", "tab:gray"))):
        ax.bar(x + (k - 1) * 0.27, sub[c], 0.27, label=c, color=colour)
    ax.set_xticks(x, [f"{t}\n(n={n})" for t, n in zip(sub["query type"], sub["n"])], fontsize=8)
    ax.set_title(d)
    ax.set_ylim(0, 105)
axes[0][0].set_ylabel("answer accuracy (%)")
axes[0][-1].legend(fontsize=7, loc="upper right")
fig.suptitle("Where the errors come from: oracle vs retrieved vs no evidence (rule answerer)")
fig.tight_layout()
