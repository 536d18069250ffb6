# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Figure 4 · Humans vs the agent
#
# The paper asked people to answer a sample of the questions (listening to the recordings) and
# compared them with the hybrid setups A4 (audio) and A5 (audio + metadata): human accuracy and
# how hard they found each query type, per type.
#
# We ship the study, not its answers: `harp human build --domain emotion` writes
# self-contained annotation pages (`data/human/pages/`); participants' downloaded answer files go
# to `results/human/answers/` (`evaluate.human.answers_dir`).  This notebook draws the figure
# **only from real answer files**; when there are none it says so and draws nothing.

# %% tags=["parameters"]
profile = None     # params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
from IPython.display import Image, Markdown, display

from harp_lib import pipeline
from harp_lib.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = pipeline.config(profile)
png, message = pipeline.human_figure(cfg)
display(Markdown(message))
if png is not None:
    display(Image(filename=str(png)))
