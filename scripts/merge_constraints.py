#!/usr/bin/env python3
"""Print requirements/constraints.txt with the pins of an environment's override file applied.

    python3 scripts/merge_constraints.py requirements/constraints.txt requirements/constraints-clap.txt > c.txt

pip refuses two constraints on one package that disagree (torch==2.13.0+cpu vs torch==2.9.1 is
ResolutionImpossible), so each separate environment keeps the main pins except the packages its
override file names (PEP 503 names; ``-c``/``-r`` lines and comments are ignored).  Used by
scripts/make_env.sh and tests/test_envs.py, so the recipe and its resolver test read the same pins.
"""
from __future__ import annotations

import re
import sys

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines):
    """(normalised name or None, line) for each line of a constraints file."""
    for line in lines:
        s = line.split("#", 1)[0].strip()
        m = _NAME.match(s) if s and not s.startswith("-") else None
        yield (norm(m.group(1)) if m else None), line.rstrip("\n")


def merge(base_text: str, override_text: str) -> str:
    over = list(pins(override_text.splitlines()))
    names = {n for n, _ in over if n}
    kept = [line for n, line in pins(base_text.splitlines()) if n and n not in names]
    return "\n".join(kept + [line for n, line in over if n]) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: merge_constraints.py BASE OVERRIDE")
    with open(sys.argv[1], encoding="utf-8") as b, open(sys.argv[2], encoding="utf-8") as o:
        sys.stdout.write(merge(b.read(), o.read()))
