"""Test modules live in folders without __init__.py, so their basenames must be unique
(pytest's default import mode otherwise fails on a clean clone with 'import file mismatch')."""
from collections import Counter
from pathlib import Path


def test_test_module_basenames_are_unique():
    root = Path(__file__).resolve().parent
    names = Counter(p.name for p in root.rglob("*.py") if p.name != "conftest.py")
    assert not [n for n, c in names.items() if c > 1]
