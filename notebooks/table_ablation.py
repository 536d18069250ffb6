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
from harp_lib import pipeline
from harp_lib.evaluate.ablation import ablation_table, write_ablation
from harp_lib.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = pipeline.config(profile)
write_ablation(cfg)
ablation_table(cfg)
