"""Reference speaker turns from an RTTM file (NIST Rich Transcription Time Marked).

One ``SPEAKER`` line per turn: ``SPEAKER <file> <chan> <onset> <duration> <NA> <NA> <name> ...``.
Before this module six places (the sample-call DER, the own-recordings evaluation and four tests)
split those lines themselves; :func:`read_rttm` is that code once.

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(prefix="rttm_doc_"), "x.rttm")
>>> _ = open(p, "w").write("SPEAKER x 1 3.5 1.25 <NA> <NA> B <NA> <NA>\\n"
...                        ";; a comment\\n\\nSPEAKER x 1 0.0 2.0 <NA> <NA> A <NA> <NA>\\n")
>>> read_rttm(p)
[(3.5, 4.75, 'B'), (0.0, 2.0, 'A')]
>>> read_rttm(p, sort=True, names={"A": "Ann"})
[(0.0, 2.0, 'Ann'), (3.5, 4.75, 'B')]
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

__all__ = ["read_rttm"]


def read_rttm(path: str | Path, *, sort: bool = False,
              names: Optional[Mapping[str, str]] = None) -> list[tuple[float, float, str]]:
    """``(start, end, speaker)`` of each ``SPEAKER`` line, in file order (``sort``: by start, then
    end and name).  ``names`` renames speakers (a name it lacks is kept).  Other line types and
    blank or ``;;`` comment lines are skipped; a malformed ``SPEAKER`` line raises ``ValueError``
    naming the file and line."""
    names = names or {}
    out = []
    for no, line in enumerate(Path(path).read_text().splitlines(), 1):
        f = line.split()
        if not f or f[0] != "SPEAKER":
            continue
        try:
            start, dur, who = float(f[3]), float(f[4]), f[7]
        except (IndexError, ValueError):
            raise ValueError(f"{path}:{no}: not an RTTM SPEAKER line "
                             f"(SPEAKER file chan onset duration <NA> <NA> name ...): {line!r}") from None
        out.append((start, start + dur, names.get(who, who)))
    return sorted(out) if sort else out
