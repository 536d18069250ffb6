"""Registers the ``judge`` backends: ``rule`` (:mod:`.rule_judge`) and ``llm`` (:mod:`.llm_judge`).

Imported by :func:`harp_lib.config.get_backend` on first lookup (``config.BACKEND_MODULES``).

>>> from harp_lib.config import list_backends
>>> [n for s, n in list_backends("judge")]
['llm', 'rule']
"""
from . import llm_judge, rule_judge  # noqa: F401  (the @register decorators run on import)
