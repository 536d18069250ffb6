"""Layer 5: your own recordings -- ``harp ingest`` (ingest) and ``harp ask`` (ask)."""
