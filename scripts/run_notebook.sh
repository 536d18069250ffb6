#!/usr/bin/env bash
# Run one notebook with papermill:  scripts/run_notebook.sh NAME OUTNAME [papermill args...]
#
#   notebooks/NAME.ipynb  ->  results/notebooks/OUTNAME.ipynb   (executed copy, git-ignored)
#                         ->  results/notebooks/OUTNAME.html    (the same as byte-stable HTML)
#
# e.g.  bash scripts/run_notebook.sh 04_answer 04_answer_emotion_A5 -p domain emotion -p setup A5
# dvc.yaml runs every stage through this script.  The kernel is `python3`, which jupyter_client
# resolves to the Python running papermill: .venv/bin/python when .venv/ exists.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ $# -lt 2 ]; then
  echo "usage: $0 NAME OUTNAME [papermill args, e.g. -p domain emotion]" >&2
  exit 2
fi
name="$1"; out="$2"; shift 2
if [ ! -f "notebooks/$name.ipynb" ]; then
  echo "$0: notebooks/$name.ipynb does not exist (notebooks: $(cd notebooks && ls *.ipynb | tr '\n' ' '))" >&2
  exit 2
fi
if [ -d .venv/bin ]; then export PATH="$PWD/.venv/bin:$PATH"; fi
if [ -n "${DVC_STAGE:-}" ] && [ -n "${HARP_PROFILE:-}" ]; then
  # DVC tracks params.yaml: its `profile` key (dvc exp run -S profile=...) must decide, not the shell
  echo "$0: ignoring HARP_PROFILE=$HARP_PROFILE inside dvc stage $DVC_STAGE (use: dvc exp run -S profile=$HARP_PROFILE)" >&2
  unset HARP_PROFILE
fi
export HARP_PROGRESS=text          # plain-text progress lines in the executed notebook
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
mkdir -p results/notebooks
python -m papermill "notebooks/$name.ipynb" "results/notebooks/$out.ipynb" \
  -k python3 --no-progress-bar "$@"
# the executed copy as byte-stable HTML beside it (readable without Jupyter; harp_lib/viz/html.py)
python -m harp_lib.viz.html "results/notebooks/$out.ipynb"
