"""Loading is safe: no pickle (or anything else that executes code) on files that are not
ours; arrays and indexes are plain ``.npy`` (``allow_pickle=False``), FAISS and JSON.

Two layers: a plain-text grep for the patterns the issue names, and an AST scan that also
catches the subtler forms (``torch.load`` without ``weights_only=True``, ``np.load`` without an
explicit ``allow_pickle=False``, ``yaml.load`` without a safe loader, imports of pickle-like
modules, ``shell=True``).  Anything found must be in :data:`ALLOWED` with its justification.
"""
from __future__ import annotations

import ast
import json
import pickle  # noqa: S403 - used here to *craft* a hostile file
import re
from pathlib import Path

import numpy as np
import pytest

from harp_lib.extract import pipeline as P
from harp_lib.retrieval.index import SegmentIndex
from harp_lib.retrieval.index_errors import IndexError_
from harp_lib.core.jsonl import write_jsonl
from harp_lib.core.schema import Segment

from rel_helpers import ROOT

LIB = ROOT / "harp_lib"

#: (file relative to the repository, rule) -> why this use is acceptable.  Keep it short.
ALLOWED: dict[tuple[str, str], str] = {
    ("harp_lib/extract/paper_mert.py", "trust_remote_code"):
        "MERT-v1-95M ships its model class as hub code; the paper backends need it.  Optional "
        "`paper` extra only, never a default backend, fixed model id, loaded only when a user "
        "selects those backends.",
    ("harp_lib/extract/paper_emotion.py", "trust_remote_code"):
        "The SER-Odyssey WavLM baseline ships its model class as hub code; the paper backend needs "
        "it.  Optional `paper` extra only, never a default backend, fixed model id, loaded only "
        "when a user selects that backend.",
}

TEXT_PATTERNS = {   # the literal patterns of the issue
    "pickle.load": re.compile(r"\bpickle\.loads?\("),
    "allow_pickle=True": re.compile(r"allow_pickle\s*=\s*True"),
    "weights_only=False": re.compile(r"weights_only\s*=\s*False"),
    "eval(": re.compile(r"(?<![\w.])eval\("),
    "exec(": re.compile(r"(?<![\w.])exec\("),
}
UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "marshal", "shelve", "joblib"}


def _sources() -> list[Path]:
    files = sorted(LIB.rglob("*.py"))
    assert len(files) > 40, "harp_lib not found"
    return files


def _kw(call: ast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _is_const(node, value) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def scan(path: Path) -> list[tuple[str, int, str]]:
    """(rule, line, source) for every risky construct in one file."""
    src = path.read_text(encoding="utf-8")
    found = []
    for rule, rx in TEXT_PATTERNS.items():
        for i, line in enumerate(src.splitlines(), 1):
            if rx.search(line.split("#", 1)[0]):
                found.append((rule, i, line.strip()))
    for node in ast.walk(ast.parse(src, filename=str(path))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for m in mods:
                if m.split(".")[0] in UNSAFE_MODULES:
                    found.append(("import " + m, node.lineno, m))
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        tail = name.rsplit(".", 1)[-1]
        if name in ("torch.load",) and not _is_const(_kw(node, "weights_only"), True):
            found.append(("torch.load without weights_only=True", node.lineno, name))
        if name in ("np.load", "numpy.load") and not _is_const(_kw(node, "allow_pickle"), False):
            found.append(("np.load without allow_pickle=False", node.lineno, name))
        if name == "yaml.load":
            loader = _dotted(_kw(node, "Loader")) if _kw(node, "Loader") is not None else ""
            if not loader.endswith(("SafeLoader", "CSafeLoader")):
                found.append(("yaml.load without SafeLoader", node.lineno, name))
        if name in ("yaml.unsafe_load", "yaml.full_load", "os.system", "os.popen") or tail == "read_pickle":
            found.append((name, node.lineno, name))
        if _is_const(_kw(node, "shell"), True):
            found.append(("shell=True", node.lineno, name))
        if _is_const(_kw(node, "trust_remote_code"), True):
            found.append(("trust_remote_code", node.lineno, name))
        if isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec", "__import__") and \
                not (node.func.id == "__import__" and node.args and isinstance(node.args[0], ast.Constant)):
            found.append((node.func.id + "(", node.lineno, node.func.id))
    return found


@pytest.mark.slow
def test_no_unsafe_loading_in_harp_lib():
    bad, used = [], set()
    for f in _sources():
        rel = f.relative_to(ROOT).as_posix()
        for rule, line, src in scan(f):
            if (rel, rule) in ALLOWED:
                used.add((rel, rule))
                continue
            bad.append(f"{rel}:{line}: {rule}: {src}")
    assert not bad, "unsafe loading (fix it, or add a justified entry to ALLOWED):\n" + "\n".join(bad)
    assert used == set(ALLOWED), f"stale ALLOWED entries: {set(ALLOWED) - used}"


def test_the_scanner_catches_what_it_claims(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("import pickle\nimport numpy as np, torch, yaml, subprocess\n"
                 "x = pickle.loads(b'')\nnp.load('a.npy')\nnp.load('a.npy', allow_pickle=True)\n"
                 "torch.load('w.pt')\ntorch.load('w.pt', weights_only=False)\n"
                 "yaml.load(open('p'))\nsubprocess.run('ls', shell=True)\neval('1')\nmodel.eval()\n"
                 "np.load('ok.npy', allow_pickle=False)\ntorch.load('ok.pt', weights_only=True)\n"
                 "yaml.load(s, Loader=yaml.SafeLoader)\n")
    rules = sorted({r for r, _, _ in scan(p)})
    assert rules == sorted({"pickle.load", "allow_pickle=True", "weights_only=False", "eval(", "import pickle",
                            "np.load without allow_pickle=False", "torch.load without weights_only=True",
                            "yaml.load without SafeLoader", "shell=True"})
    assert [ln for r, ln, _ in scan(p) if r.startswith("np.load")] == [4, 5]


class _Payload:
    """Unpickling this creates ``marker`` (stands for arbitrary code execution)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (self.marker.touch, ())


def _hostile_npy(path: Path, marker: Path) -> Path:
    arr = np.empty((1, 1), dtype=object)
    arr[0, 0] = _Payload(marker)
    with open(path, "wb") as fh:
        np.save(fh, arr, allow_pickle=True)
    assert b"touch" in path.read_bytes()            # the payload is really in the file
    return path


def test_pickle_bearing_npy_is_refused_by_the_index(tmp_path):
    marker = tmp_path / "PWNED"
    ext = tmp_path / "extract"
    write_jsonl(ext / "segments" / "r.jsonl", [Segment("r_ext_0000", "r", 0, 1, "S0", "hi", source="extracted")])
    (ext / "spaces.json").write_text(json.dumps({"audio": {"backend": "audio_stats", "model": "m", "dim": 1}}))
    (ext / "vectors").mkdir()
    _hostile_npy(ext / "vectors" / "r.audio.npy", marker)
    with pytest.raises(IndexError_, match=r"r\.audio\.npy: not a plain numeric \.npy array .*allow_pickle=False"):
        SegmentIndex.build(ext, tmp_path / "index", progress=False)
    assert not marker.exists()


def test_pickle_bearing_stage1_cache_is_refused_in_extraction(ci_reference, tmp_path):
    """A hostile ``stage1/<rec>/audio.npy`` is refused; the recording is quarantined, not run."""
    import shutil
    from rel_helpers import cheap_cfg
    root = tmp_path / "root"
    for s in ("benchmark", "extract"):
        shutil.copytree(ci_reference / s, root / s)
    ext = root / "extract" / "clinical"
    marker = tmp_path / "PWNED"
    _hostile_npy(ext / "stage1" / "consult_002" / "audio.npy", marker)
    rep = P.extract_domain(cheap_cfg(root), "clinical", stage=2, force=True, progress=False)
    assert not marker.exists()
    assert [q["recording_id"] for q in rep["quarantine"]] == ["consult_002"]
    assert "allow_pickle=False" in rep["quarantine"][0]["error"]
    assert sorted(r["id"] for r in rep["recordings"]) == ["consult_001", "consult_003"]


def test_corrupt_faiss_and_index_metadata_are_clear_errors(ci_reference, tmp_path):
    import shutil
    ix = tmp_path / "index"
    shutil.copytree(ci_reference / "index" / "clinical", ix)
    assert len(SegmentIndex.load(ix)) > 0
    (ix / "audio.faiss").write_bytes(b"garbage!" * 8)
    with pytest.raises(IndexError_, match=r"audio\.faiss: not a readable FAISS index"):
        SegmentIndex.load(ix)
    shutil.copy(ci_reference / "index" / "clinical" / "audio.faiss", ix / "audio.faiss")
    (ix / "audio.json").write_text("{not json")
    with pytest.raises(IndexError_, match=r"audio\.json: unreadable index metadata"):
        SegmentIndex.load(ix)
    pickle.dumps(1)   # (keeps the import honest: this file crafts pickles, it never loads one)
