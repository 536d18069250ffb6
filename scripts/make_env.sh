#!/usr/bin/env bash
# Create one of the paper environments, with pins that keep pip from swapping torch.
#
#   scripts/make_env.sh pyannote [PREFIX]  # stage 1 of the paper profile: torch 2.9.1 + torchaudio 2.9 +
#                                          # torchcodec 0.8 + pyannote.audio 4.0.7 + whisper + openbeats
#                                          # (+ .[paper]: bge-small, MERT, emotion2vec ...)
#   scripts/make_env.sh clap [PREFIX]      # torch 2.14.1 + torchvision 0.29.1 + numpy<2 + laion-clap 1.1.7
#   scripts/make_env.sh paper [PREFIX]     # the main environment (torch 2.13.0 CPU) + .[paper]
#                                          # (`scripts/make_env.sh paper .venv` adds them to the main env)
#   scripts/make_env.sh cuda [PREFIX]      # the main environment on a GPU machine: PyPI's CUDA torch 2.13.0
#
# PREFIX defaults to .envs/<target> (git-ignored).  Pins: requirements/constraints.txt with the
# target's requirements/constraints-<target>.txt applied over it (scripts/merge_constraints.py;
# tests/test_envs.py dry-runs the same resolution).  Needs PyPI (no model hub): weights are fetched
# separately and explicitly with `<PREFIX>/bin/harp fetch-weights --profile paper`.
# Ends with an import check and `harp doctor` (missing weights/tokens are expected until then).
# Re-running on an existing PREFIX installs only what is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
TARGET="${1:-}"
case "$TARGET" in
  pyannote|clap|paper|cuda) ;;
  *) echo "usage: $0 pyannote|clap|paper|cuda [PREFIX]  (see docs/environments.md)" >&2; exit 2 ;;
esac
PREFIX="${2:-.envs/$TARGET}"
PY="${PYTHON:-python3}"
log() { printf '[make_env %s] %s\n' "$TARGET" "$*" >&2; }
START=$SECONDS

# ---- constraints ------------------------------------------------------------------------
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
CONS="$PREFIX/harp-constraints.txt"
if [ "$TARGET" = paper ]; then
  cp requirements/constraints.txt "$CONS"
else
  "$PY" scripts/merge_constraints.py requirements/constraints.txt "requirements/constraints-$TARGET.txt" > "$CONS"
fi
pin() { sed -n "s/^$1==\([^ #]*\).*/\1/p" "$CONS" | head -1; }

# ---- venv + torch first (never let pip resolve a plain `torch`) ---------------------------
[ -x "$PREFIX/bin/python" ] || { log "python -m venv $PREFIX"; "$PY" -m venv "$PREFIX"; }
VPY="$PREFIX/bin/python"
PIP=("$VPY" -m pip --disable-pip-version-check)
TORCH="$(pin torch)"
log "pip install torch==$TORCH (pinned by $CONS)"
case "$TARGET" in
  pyannote) "${PIP[@]}" install -c "$CONS" "torch==$TORCH" "torchaudio==$(pin torchaudio)" "torchcodec==$(pin torchcodec)" ;;
  clap)     "${PIP[@]}" install -c "$CONS" "torch==$TORCH" "torchvision==$(pin torchvision)" "numpy==$(pin numpy)" ;;
  paper)    "${PIP[@]}" install -c "$CONS" "torch==$TORCH" ;;   # 2.13.0+cpu: the wheel on local disk
  cuda)     "${PIP[@]}" install -c "$CONS" "torch==$TORCH"
            "$VPY" -c 'import torch, sys
if torch.version.cuda is None:
    sys.exit(f"torch {torch.__version__} is a CPU build: pip took a local CPU wheel; run with '
                    '--no-cache-dir and without find-links to /opt/wheels, or on the GPU machine")
print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPU available:", torch.cuda.is_available())' ;;
esac

# ---- harp_lib + the target's extras -------------------------------------------------------
case "$TARGET" in
  pyannote) EXTRAS="pyannote,openbeats,paper,test" ;;
  clap)     EXTRAS="clap,test" ;;
  paper)    EXTRAS="paper,test,scale" ;;
  cuda)     EXTRAS="paper,test,scale" ;;
esac
log "pip install -e .[$EXTRAS]"
"${PIP[@]}" install -c "$CONS" -e ".[$EXTRAS]"

# resemblyzer pulls webrtcvad 2.0.10, which breaks on `pkg_resources`; webrtcvad-wheels is the
# same module with wheels (as scripts/bootstrap.sh does for the main env).
if "$VPY" -c 'import importlib.metadata as m; m.version("webrtcvad")' 2>/dev/null; then
  log "replacing webrtcvad by webrtcvad-wheels"
  "${PIP[@]}" uninstall -q -y webrtcvad
  "${PIP[@]}" install -q --force-reinstall --no-deps -c "$CONS" webrtcvad-wheels
fi

# ---- import check -------------------------------------------------------------------------
log "import check"
export PYANNOTE_METRICS_ENABLED=0
case "$TARGET" in
  pyannote) CHECK='import torch, torchaudio, torchcodec, pyannote.audio, whisper, openbeats.model, sentence_transformers
assert torch.__version__.startswith("2.9.1"), torch.__version__
print("torch", torch.__version__, "torchaudio", torchaudio.__version__, "pyannote.audio", pyannote.audio.__version__)' ;;
  clap)     CHECK='import numpy, torch, torchvision
from torchvision.ops import nms
assert numpy.__version__.startswith("1."), numpy.__version__
print("torch", torch.__version__, "torchvision", torchvision.__version__, "numpy", numpy.__version__)
import importlib.metadata as md
print("laion-clap", md.version("laion-clap"))
try:
    import laion_clap   # builds bert/roberta/bart tokenizers at import: needs them in the HF cache
    print("import laion_clap: ok")
except OSError as e:
    print("import laion_clap: installed, but its tokenizers are not in the HF cache (offline):",
          str(e).split(".")[0] + ". Run: harp fetch-weights --backend clap")' ;;
  paper|cuda) CHECK='import torch, whisper, sentence_transformers, funasr, resemblyzer, webrtcvad
print("torch", torch.__version__, "cuda", torch.version.cuda)' ;;
esac
# HF_HUB_OFFLINE=1: an import that reaches for the hub (laion_clap) fails at once instead of
# retrying for minutes.
HF_HUB_OFFLINE=1 "$VPY" -c "$CHECK
import harp_lib; print('harp_lib', harp_lib.__file__)"
"${PIP[@]}" check || log "pip check reports conflicts (above; 'resemblyzer requires webrtcvad' is expected: webrtcvad-wheels provides that module)"

# ---- harp doctor ----------------------------------------------------------------------------
log "harp doctor --profile paper --no-server (MISSING weights/tokens are expected until you run "
log "  $PREFIX/bin/harp fetch-weights --profile paper; doctor never downloads)"
"$PREFIX/bin/harp" doctor --profile paper --no-server || true
log "done in $((SECONDS - START)) s: $(du -sh "$PREFIX" | cut -f1) in $PREFIX"
