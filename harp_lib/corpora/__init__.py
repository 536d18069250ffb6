"""Layer 4: the built-in benchmark generator (synth), the paper corpora (datasets), the benchmark-folder check."""
