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
# NAME and OUTNAME are plain file names (no '/', no '..'): the executed copy never leaves
# results/notebooks/ (or the scratch folder) and never overwrites a notebook under notebooks/
for v in "NAME:$name" "OUTNAME:$out"; do
  if ! [[ "${v#*:}" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || [[ "${v#*:}" == *..* ]]; then
    echo "$0: ${v%%:*} '${v#*:}' is not a plain name (letters, digits, '.', '_', '-'; no '/' or '..')" >&2
    exit 2
  fi
done
if [ ! -f "notebooks/$name.ipynb" ]; then
  echo "$0: notebooks/$name.ipynb does not exist (notebooks: $(cd notebooks && ls *.ipynb | tr '\n' ' '))" >&2
  exit 2
fi
# `dvc exp run --queue` / `--temp` runs each experiment in a temporary copy of the repository,
# <repo>/.dvc/tmp/exps/<tmp>/, which holds the tracked files and the DVC outs only: the git-ignored
# .venv/ and .cache/ (cough recordings, real music, synth/LLM caches fetched by scripts/bootstrap.sh)
# are missing there.  Link them from the repository the experiment was queued in.
case "$PWD" in
  */.dvc/tmp/exps/*)
    main="${PWD%%/.dvc/tmp/exps/*}"
    for p in .venv .cache; do
      if [ ! -e "$p" ] && [ -e "$main/$p" ]; then ln -s "$main/$p" "$p"; fi
    done ;;
esac
if [ -d .venv/bin ]; then export PATH="$PWD/.venv/bin:$PATH"; fi
# the kernel imports harp_lib from this checkout (also in an experiment's temporary copy)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -n "${DVC_STAGE:-}" ] && [ -n "${HARP_PROFILE:-}" ]; then
  # DVC tracks params.yaml: its `profile` key (dvc exp run -S profile=...) must decide, not the shell
  echo "$0: ignoring HARP_PROFILE=$HARP_PROFILE inside dvc stage $DVC_STAGE (use: dvc exp run -S profile=$HARP_PROFILE)" >&2
  unset HARP_PROFILE
fi
export HARP_PROGRESS=terminal      # plain-text progress lines on the terminal, none in the executed page
source scripts/deterministic_env.sh   # same SIMD code path and thread counts on every machine: byte-stable vectors
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
# A partial run (`limit`, `overrides`) is not a pipeline result: its executed copy goes to the
# scratch folder, as do its outputs (harp_lib/app/notebook.py redirects paths.* to data/scratch/<tag>/).
# Which arguments make a partial run is decided in one place: harp_lib.app.notebook.partial_run_args.
kind="$(python -m harp_lib.app.notebook partial-run "$@")"
outdir=results/notebooks
[ "$kind" = full ] || outdir=data/scratch/notebooks
# a run on another profile from the shell (HARP_PROFILE=ci) is not the committed pages either
[ -n "${HARP_PROFILE:-}" ] && outdir=data/scratch/notebooks
if [ -n "${DVC_STAGE:-}" ] && [ "$outdir" != results/notebooks ]; then
  echo "$0: dvc stage $DVC_STAGE passes limit/overrides: a partial run is not a pipeline result (drop them from dvc.yaml)" >&2
  exit 2
fi
mkdir -p "$outdir"
for f in "$outdir/$out.ipynb" "$outdir/$out.html"; do
  if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then
    echo "$0: $f is a symbolic link or not a regular file; refusing to write through it (remove it first)" >&2
    exit 2
  fi
done
[ "$outdir" = results/notebooks ] || echo "$0: partial run: executed copy -> $outdir/$out.ipynb" >&2
# papermill through harp_lib.app.notebook: a failing cell is reported as one first line (ENAME: message,
# the cell, the executed copy), exit 2 for a bad -p, 1 otherwise; HARP_DEBUG=1 adds papermill's traceback
python -m harp_lib.app.notebook "notebooks/$name.ipynb" "$outdir/$out.ipynb" \
  -k python3 --no-progress-bar "$@"
# the executed copy as byte-stable HTML beside it (readable without Jupyter; harp_lib/viz/html.py)
python -m harp_lib.viz.html "$outdir/$out.ipynb"
