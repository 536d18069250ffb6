"""The built-in benchmark: deterministic long-form recordings, references, ground truth and
queries for all ten query types, generated offline from a seed.

Usage (writes audio; tests/synth/test_generate.py checks the result)::

    from harp_lib.corpora.synth import generate
    m = generate("ci", seed=0, out=Path("data/benchmark"))
    m.counts["emotion"]["queries"]["state"]     # 4

Layout (docs/architecture.md): ``<out>/<domain>/{recordings.jsonl, recordings/, references/,
segments.jsonl, queries.jsonl}``, ``<out>/manifest.json`` (profile, seed, counts, audio
minutes, sha256 of every file; no timings) and ``<out>/timings.json`` (not hashed).
See docs/dataset_card.md for how each domain is built.
"""
from harp_lib.corpora.synth.generate import Manifest, generate, validate_domain

__all__ = ["generate", "Manifest", "validate_domain"]
