"""``harp verify``: after a ``dvc repro``, what moved against the committed results, in one screen.

A reviewer on another machine runs ``dvc repro`` and should get the committed table.  When
they do not, a dirty ``git status`` says only *that* something moved.  This command says what
and where it started:

1. **Stages** (``dvc.lock`` of the working tree against ``git show REF:dvc.lock``): every stage
   whose outputs have other hashes, in pipeline order (a stage comes after the stages whose
   outputs it reads), and the **first** of them: the stage to look at (the later ones follow
   from it unless their own code or params changed, which is listed too).
2. **Metrics** (``results/metrics/*.json``): each value that changed, old -> new.
3. **Transcripts** (``results/metrics/extract_<domain>.transcripts.tsv``, one line per extracted
   segment, written by the extract stage): the first segments whose words differ, the words
   around the first difference side by side.
4. **Other committed files** under ``results/`` that differ (tables, figures, pages).

Exit status 0 when nothing differs, 1 when something does (2: not a git checkout / no lock).

    .venv/bin/harp verify                 # against HEAD
    .venv/bin/harp verify --ref origin/main --max-lines 40
"""
from __future__ import annotations

import difflib
import json
import subprocess
from pathlib import Path
from typing import Iterable, Optional

import yaml

from harp_lib.config import ConfigError, repo_root

__all__ = ["stage_changes", "pipeline_order", "metric_changes", "transcript_changes", "verify", "run"]


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def _committed(root: Path, ref: str, path: str) -> Optional[str]:
    r = _git(root, "show", f"{ref}:{path}")
    return r.stdout if r.returncode == 0 else None


def _outs(stage: dict) -> dict[str, str]:
    return {o["path"]: o.get("md5", "") for o in stage.get("outs", ())}


def pipeline_order(stages: dict) -> list[str]:
    """Stage names of a ``dvc.lock`` ``stages`` mapping, each after the stages whose outputs
    it depends on (ties: the lock's order).

    >>> pipeline_order({"b": {"deps": [{"path": "data/a/x"}], "outs": [{"path": "data/b"}]},
    ...                 "a": {"deps": [], "outs": [{"path": "data/a"}]}})
    ['a', 'b']
    """
    def feeds(a: str, b: str) -> bool:
        return any(d["path"] == o or d["path"].startswith(o.rstrip("/") + "/")
                   for o in _outs(stages[a]) for d in stages[b].get("deps", ()))
    names, done = list(stages), []
    while names:
        ready = next((n for n in names if not any(feeds(m, n) for m in names if m != n)), names[0])
        done.append(ready)
        names.remove(ready)
    return done


def stage_changes(old: dict, new: dict) -> list[dict]:
    """Per stage (pipeline order) whose outputs differ: ``{"stage", "outs", "deps", "params"}``,
    the paths whose hashes differ and the changed param keys (what may explain it)."""
    old_s, new_s = old.get("stages", {}), new.get("stages", {})
    out = []
    for name in pipeline_order(new_s):
        a, b = old_s.get(name, {}), new_s[name]
        oa, ob = _outs(a), _outs(b)
        outs = sorted(p for p in set(oa) | set(ob) if oa.get(p) != ob.get(p))
        if not outs:
            continue
        da = {d["path"]: d.get("md5") for d in a.get("deps", ())}
        db = {d["path"]: d.get("md5") for d in b.get("deps", ())}
        pa = _flat(a.get("params", {}))
        pb = _flat(b.get("params", {}))
        out.append({"stage": name, "outs": outs,
                    "deps": sorted(p for p in set(da) | set(db) if da.get(p) != db.get(p)),
                    "params": sorted(k for k in set(pa) | set(pb) if pa.get(k) != pb.get(k))})
    return out


def _flat(d, prefix: str = "") -> dict:
    """Nested mapping -> ``{"a.b.c": leaf}`` (lists are leaves)."""
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(_flat(v, key) if isinstance(v, dict) else {key: v})
    return out


def metric_changes(old: dict, new: dict, ignore: Iterable[str] = ("stage_sec", "rtf", "run")) -> list[tuple]:
    """``[(key, old, new)]`` for every leaf of two metrics dicts that differs (timing keys skipped).

    >>> metric_changes({"wer": 0.0673, "der": 0.1}, {"wer": 0.0693, "der": 0.1})
    [('wer', 0.0673, 0.0693)]
    """
    skip = tuple(ignore)
    fa, fb = _flat(old), _flat(new)
    return [(k, fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb))
            if fa.get(k) != fb.get(k) and not k.split(".")[0] in skip]


def _rows(text: str) -> dict[str, tuple[str, str]]:
    rows = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 4 and parts[0] != "segment_id":
            rows[parts[0]] = (f"{parts[1]}-{parts[2]}", parts[3])
    return rows


def transcript_changes(old_text: str, new_text: str, limit: int = 3, context: int = 4) -> dict:
    """First segments whose transcript differs between two ``.transcripts.tsv`` texts:
    ``{"n_segments", "n_changed", "first": [{"segment", "time", "old", "new"}]}`` with the
    words around each segment's first difference.

    >>> old = "segment_id\\tstart\\tend\\ttext\\ns1\\t0.0\\t2.0\\tSo we'll come.\\n"
    >>> print(transcript_changes(old, old.replace("So we'll", "So, we'll"))["first"][0]["new"])
    So, we'll come.
    """
    a, b = _rows(old_text), _rows(new_text)
    ids = [i for i in b if a.get(i) != b.get(i)] + [i for i in a if i not in b]
    first = []
    for i in ids[:limit]:
        wa = (a.get(i, ("", ""))[1]).split()
        wb = (b.get(i, ("", ""))[1]).split()
        sm = difflib.SequenceMatcher(a=wa, b=wb, autojunk=False)
        op = next((o for o in sm.get_opcodes() if o[0] != "equal"), ("equal", 0, 0, 0, 0))
        lo_a, lo_b = max(0, op[1] - context), max(0, op[3] - context)
        first.append({"segment": i, "time": (b.get(i) or a.get(i))[0],
                      "old": " ".join(wa[lo_a: op[2] + context]), "new": " ".join(wb[lo_b: op[4] + context])})
    return {"n_segments": len(b), "n_changed": len(ids), "first": first}


def verify(root: Optional[Path] = None, ref: str = "HEAD") -> dict:
    """Everything that differs from ``ref`` (see the module doc); ``report["clean"]``: nothing."""
    root = Path(root or repo_root())
    if _git(root, "rev-parse", "--git-dir").returncode != 0:
        raise ConfigError(f"{root}: not a git checkout (harp verify compares with committed files)")
    lock = root / "dvc.lock"
    old_lock = _committed(root, ref, "dvc.lock")
    if not lock.exists() or old_lock is None:
        raise ConfigError(f"no dvc.lock in the working tree or at {ref}: run `dvc repro` first")
    stages = stage_changes(yaml.safe_load(old_lock) or {}, yaml.safe_load(lock.read_text()) or {})
    changed = _git(root, "diff", "--name-only", ref, "--", "results").stdout.split()
    metrics, transcripts, other = {}, {}, []
    for path in changed:
        old = _committed(root, ref, path)
        cur = root / path
        if path.endswith(".json") and path.startswith("results/metrics/") and old is not None and cur.exists():
            metrics[path] = metric_changes(json.loads(old), json.loads(cur.read_text()))
        elif path.endswith(".transcripts.tsv") and old is not None and cur.exists():
            transcripts[path] = transcript_changes(old, cur.read_text())
        else:
            other.append(path)
    return {"ref": ref, "stages": stages, "metrics": metrics, "transcripts": transcripts, "other": other,
            "clean": not (stages or changed)}


def render(rep: dict, max_lines: int = 30) -> str:
    """The report as text, one screen (``max_lines`` bounds each list)."""
    if rep["clean"]:
        return f"harp verify: every stage output, metric, table, figure and page equals {rep['ref']}."
    lines = [f"harp verify: outputs differ from {rep['ref']}"]
    if rep["stages"]:
        s0 = rep["stages"][0]
        lines.append(f"first stage whose outputs differ: {s0['stage']}"
                     + (f" (its code/data deps changed: {', '.join(s0['deps'][:6])})" if s0["deps"] else
                        " (its deps and params are unchanged: same inputs, other bytes — a machine difference)"
                        if not s0["params"] else f" (params changed: {', '.join(s0['params'][:6])})"))
        for s in rep["stages"][:max_lines]:
            lines.append(f"  {s['stage']:<20} outs: {', '.join(s['outs'])}")
    for path, ch in rep["metrics"].items():
        lines.append(f"{path}: {len(ch)} value(s) changed")
        lines += [f"  {k}: {a} -> {b}" for k, a, b in ch[:max_lines]]
    for path, t in rep["transcripts"].items():
        lines.append(f"{path}: {t['n_changed']} of {t['n_segments']} segment transcript(s) differ; first:")
        for f in t["first"]:
            lines += [f"  {f['segment']} ({f['time']} s)", f"    was: ...{f['old']}...", f"    now: ...{f['new']}..."]
    if rep["other"]:
        lines.append(f"other committed files that differ ({len(rep['other'])}): " + ", ".join(rep["other"][:max_lines]))
    return "\n".join(lines)


def add_arguments(ap) -> None:
    ap.add_argument("--ref", default="HEAD", help="the commit to compare with (default HEAD)")
    ap.add_argument("--max-lines", type=int, default=30, help="at most this many lines per list")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")


def run(cfg, a) -> int:
    rep = verify(ref=a.ref)
    print(json.dumps(rep, indent=1) if a.json else render(rep, a.max_lines))
    return 0 if rep["clean"] else 1
