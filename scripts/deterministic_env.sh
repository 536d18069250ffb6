# Source this before Python starts (scripts/run_notebook.sh does, so every DVC stage runs with it):
#   source scripts/deterministic_env.sh
#
# Byte-stable outputs across machines, in two layers (docs/testing.md "Cross-machine bytes"):
# 1. The guarantee is in the code: every stored embedding is computed in float64 and put on a fixed
#    2^-22 grid before it is stored as float32 (harp_lib/extract/embedders.canonical), and search
#    scores are float64 on a 1e-6 grid with ties broken by segment id; the ASR (Whisper, engine
#    exact) and both silero VADs run in float64 with every decision on a 2^-24 grid
#    (harp_lib/extract/whisper_exact.py; tests/extract/test_cross_cpu.py runs them under other
#    CPU models with qemu-user and compares the bytes).  That holds whatever kernels
#    run: tests/golden/test_determinism.py computes the stored bytes under AVX-512, AVX2 and SSE4
#    settings and 1 and 2 threads, and they must agree.  (Env pinning alone did not hold: MKL picks
#    its kernels by CPU vendor, and on an Intel Xeon MiniLM float32 vectors differed between 1 and
#    2 threads under these very settings.)
# 2. The settings below narrow the rest (the float32 diarizer encoder, label features, CTranslate2,
#    the LLM) to one SIMD level and one thread: AVX2 on every AVX2 host.  Variables already set are
#    kept; HARP_DETERMINISTIC=0 skips all of it (faster on big machines, outputs then
#    machine-dependent).
if [ "${HARP_DETERMINISTIC:-1}" != "0" ]; then
  if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    export ATEN_CPU_CAPABILITY="${ATEN_CPU_CAPABILITY:-avx2}"          # torch vectorised kernels
    export ONEDNN_MAX_CPU_ISA="${ONEDNN_MAX_CPU_ISA:-AVX2}"            # torch's oneDNN (linear, conv)
    export MKL_CBWR="${MKL_CBWR:-AVX2}"                               # MKL conditional numerical reproducibility
    export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"          # numpy/scipy OpenBLAS kernels
    # numpy 2.x run-time dispatch groups: no AVX-512 loops (X86_V4, ICL, SPR); the X86_V3 (AVX2) ones run
    export NPY_DISABLE_CPU_FEATURES="${NPY_DISABLE_CPU_FEATURES:-X86_V4 AVX512_ICL AVX512_SPR}"
  fi
  # CTranslate2 (only with extract.options.whisper_ct2.engine: ctranslate2) dispatches its own
  # kernels: no MKL (Intel-only), AVX2 ISA on AVX2 hosts.  This narrows, it does not remove, the
  # CPU dependence: an Intel Sapphire Rapids host decoded other words under it (issue 38)
  export CT2_USE_MKL="${CT2_USE_MKL:-0}"
  if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    export CT2_FORCE_CPU_ISA="${CT2_FORCE_CPU_ISA:-AVX2}"
  fi
  export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"                      # the extraction parallelises over
  export MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"                      # recordings (extract.workers), not
  export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"            # threads inside one BLAS call
fi
