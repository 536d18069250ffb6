"""Loading the paraphrase set: ``harp_lib/data/paraphrases.jsonl`` read and checked row by row
(:func:`load_paraphrases`), its fixed tune / eval split (:func:`split_rows`) and the fixed
stratified subset of ``--per-task`` (:func:`subset`).  :data:`TASK_ORDER` is the order of the
ten task types (the rows of the report)."""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["TASK_ORDER", "load_paraphrases", "split_rows", "subset"]

TASK_ORDER = ("state", "change", "comparison", "locate", "locate_hard", "reported", "exhibited",
              "time", "position", "audio")


def data_rows(name: str, path: Optional[Path] = None) -> tuple[str, list[tuple[int, dict]]]:
    """``(source, [(line number, row), ...])`` of the JSON lines of ``harp_lib/data/<name>`` (or
    ``path``): blank lines skipped, a line that is not JSON a ValueError naming it (the question
    sets: paraphrases, own questions)."""
    if path is None:
        text = resources.files("harp_lib").joinpath(f"data/{name}").read_text(encoding="utf-8")
        src = f"harp_lib/data/{name}"
    else:
        text, src = Path(path).read_text(encoding="utf-8"), str(path)
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((i, json.loads(line)))
        except json.JSONDecodeError as e:
            raise ValueError(f"{src}:{i}: not JSON ({e.msg}); fix the line") from None
    return src, out


def load_paraphrases(path: Optional[Path] = None) -> list[dict]:
    """The paraphrase rows (``harp_lib/data/paraphrases.jsonl`` unless ``path``)."""
    src, numbered = data_rows("paraphrases.jsonl", path)
    rows = []
    for i, r in numbered:
        missing = [k for k in ("id", "task", "n", "text", "tools") if k not in r]
        if missing or r["task"] not in TASK_ORDER:
            raise ValueError(f"{src}:{i}: row {r.get('id')!r} lacks {missing} or has an unknown task "
                             f"{r.get('task')!r} (tasks: {', '.join(TASK_ORDER)})")
        if r.get("split", "tune") not in ("tune", "eval"):
            raise ValueError(f"{src}:{i}: row {r['id']!r} has split {r['split']!r} (tune or eval)")
        rows.append(r)
    return rows


def split_rows(rows: Sequence[dict]) -> dict[str, str]:
    """The fixed tune / eval split: row id -> ``tune`` or ``eval``.  Within each stratum (the task,
    or ``unsupported`` for the rows no task fits) the rows are ordered by the sha256 of their id and
    alternate tune, eval, tune...  It reads nothing but the ids, never a result.

    >>> split_rows([{"id": "p001", "task": "state"}, {"id": "p002", "task": "state"}])
    {'p001': 'tune', 'p002': 'eval'}
    """
    strata: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        strata["unsupported" if r.get("expect") == "unsupported" else r["task"]].append(r)
    out = {}
    for rs in strata.values():
        for i, r in enumerate(sorted(rs, key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())):
            out[r["id"]] = "tune" if i % 2 == 0 else "eval"
    return out


def subset(rows: Sequence[dict], per_task: int) -> list[dict]:
    """A fixed stratified subset: the first ``per_task`` rows (by id) of every task, and as many
    of the rows no task fits (``expect: unsupported``), in id order.

    >>> rows = [{"id": f"p{i:03d}", "task": t} for i, t in enumerate(["state"] * 3 + ["time"] * 2)]
    >>> [r["id"] for r in subset(rows + [{"id": "p099", "task": "state", "expect": "unsupported"}], 1)]
    ['p000', 'p003', 'p099']
    """
    if per_task < 1:
        raise ValueError(f"--per-task must be >= 1, got {per_task}")
    seen: dict[str, int] = defaultdict(int)
    out = []
    for r in sorted(rows, key=lambda r: r["id"]):
        key = "unsupported" if r.get("expect") == "unsupported" else r["task"]
        if seen[key] < per_task:
            seen[key] += 1
            out.append(r)
    return out
