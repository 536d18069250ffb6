"""Layer 5: the ``harp`` CLI, doctor, sweeps, scale-out, weight download, notebook helpers, verify."""
