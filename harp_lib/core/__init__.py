"""Layer 1: records and their JSONL io, labels, time spans, audio, paths, atomic writes, locks, hashing, progress."""
