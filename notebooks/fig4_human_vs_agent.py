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
# from those real answer files.  **When there are none** (as on `mini`: no study has been run)
# it draws a clearly marked **DEMO** instead: the answers of a *simulated* listener shipped in
# `harp_lib/data/demo_human_answers.json` (right with probability 0.7, difficulty at random;
# `scripts/make_demo_human_answers.py`), scored by the same scorer as real answers, so you can
# see what the figure shows.  The demo says nothing about people; `results/metrics/human_study.json`
# records `"demo": true`.

# %% tags=["parameters"]
profile = None  # type: Optional[str]  params.yaml profile (None: $HARP_PROFILE, else params.yaml `profile`)

# %%
from IPython.display import Image, Markdown, display

from harp_lib.stages.common import config
from harp_lib.stages.figures import human_figure
from harp_lib.app.notebook import check_parameters

check_parameters(globals())   # an unknown or out-of-range papermill -p is an error

cfg = config(profile)
png, message = human_figure(cfg)
display(Markdown(message))
if png is not None:
    display(Image(filename=str(png)))
