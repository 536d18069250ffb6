"""docs/architecture.md's picture of the folders and layers is the one the code draws
(scripts/architecture_picture.py), and the drawing follows the imports."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from harp_testing import fake_package

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("architecture_picture", ROOT / "scripts" / "architecture_picture.py")
ap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ap)

DOC = """# x

## Layers

| layer | packages | what |
|---|---|---|
| 1 core | `__init__`, `core.*` | records |
| 2 services | `retrieval.*` | index |
| 3 stages | `agent.*` | agent |

## Next
"""


_pkg = fake_package


def test_the_docs_picture_is_the_codes():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "architecture_picture.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_picture_draws_layers_packages_modules_and_reduced_arrows(tmp_path):
    root = _pkg(tmp_path, {"__init__.py": "", "core/__init__.py": "", "core/schema.py": "",
                           "retrieval/__init__.py": "", "retrieval/index.py": "from harp_lib.core import schema\n",
                           "agent/__init__.py": "", "agent/runner.py": "from harp_lib.retrieval.index import X\n"
                                                                       "from harp_lib.core.schema import Y\n"})
    pic = ap.picture(root, DOC)
    assert pic.index('subgraph L0["3 stages"]') < pic.index('subgraph L2["1 core"]')    # top floor first
    assert '<b>retrieval/</b><br/>index' in pic and '<b>core/</b><br/>schema' in pic
    assert "harp_lib_agent --> harp_lib_retrieval" in pic and "harp_lib_retrieval --> harp_lib_core" in pic
    assert "harp_lib_agent --> harp_lib_core" not in pic          # implied by agent -> retrieval -> core


def test_the_check_fails_when_an_import_changes(tmp_path):
    files = {"__init__.py": "", "core/__init__.py": "", "core/schema.py": "", "retrieval/__init__.py": "",
             "retrieval/index.py": "", "agent/__init__.py": "", "agent/runner.py": ""}
    root = _pkg(tmp_path, files)
    before = ap.picture(root, DOC)
    (root / "harp_lib" / "agent" / "runner.py").write_text("def f():\n    from harp_lib.core import schema\n")
    after = ap.picture(root, DOC)
    assert before != after and "harp_lib_agent --> harp_lib_core" in after
    doc = f"{DOC}\n{ap.BEGIN}\n{before}\n{ap.END}\n"
    assert ap.with_picture(doc, after) != doc and ap.with_picture(doc, before) == doc
